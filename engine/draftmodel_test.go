package engine

import (
	"errors"
	"github.com/batchd/batchd/engine/sched"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/model"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestDraftModelNeedsTheTargetsVocabulary: a draft whose tokens are not the
// target's, id for id, is refused at New, as is "draft" without a model.
func TestDraftModelNeedsTheTargetsVocabulary(t *testing.T) {
	m := loadModel(t, "gguf")
	other, err := model.Load(filepath.Join(testmodels.Dir(t), "arch", "tiny-llama3.gguf"), model.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	be, err := cpuNew(m, backend.Options{NumBlocks: 16, BlockSize: 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	dbe, err := cpuNew(other, backend.Options{NumBlocks: 16, BlockSize: 16, Threads: 1, ShareThreads: be})
	if err != nil {
		t.Fatal(err)
	}
	defer dbe.Close()
	for _, tc := range []struct {
		name  string
		draft *DraftModel
		want  string
	}{
		{"another vocabulary", &DraftModel{Model: other, Backend: dbe, NumBlocks: 16}, "vocabulary"},
		{"no draft model", nil, "needs a draft model"},
	} {
		_, err := New(Options{Model: m, Backend: be, NumBlocks: 16, Speculative: SpecConfig{Method: "draft", Draft: tc.draft}})
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want ErrInvalidArgument saying %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(Options{Model: m, Backend: be, NumBlocks: 16, Speculative: SpecConfig{Method: "eagle"}}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("New with method eagle: %v, want ErrInvalidArgument", err)
	}
}

// TestDraftModelCatchesUpInChunks: a prompt longer than the catch-up is
// prefilled into the draft model over several steps, drafting only once
// it has caught up; the output is the target's.
func TestDraftModelCatchesUpInChunks(t *testing.T) {
	m := loadModel(t, "gguf")
	prompt := strings.Repeat("Tim and Sam went to the park to play with a ball. ", 12)
	want := run(t, startEngine(t, m, engineOpts{blocks: 512}), Request{Prompt: prompt, MaxTokens: 40})
	e := startEngine(t, m, engineOpts{blocks: 512, spec: SpecConfig{Method: "draft", MaxBatch: 16, Ungated: true}, draft: m})
	e.spec.drafter.catchup = 64 // set before Submit, which the loop's read follows
	if want.done.Usage.PromptTokens <= 3*e.spec.drafter.catchup {
		t.Fatalf("prompt of %d tokens: want more than three catch-ups", want.done.Usage.PromptTokens)
	}
	got := run(t, e, Request{Prompt: prompt, MaxTokens: 40})
	if got.text != want.text {
		t.Errorf("with a draft model:\n %q\nwithout:\n %q", got.text, want.text)
	}
	if st := e.Stats(); st.SpecAccepted == 0 || st.SpecAccepted != st.SpecDrafted {
		t.Errorf("self-draft after catching up: %d of %d kept, want all and some", st.SpecAccepted, st.SpecDrafted)
	}
}

// TestDraftModelPoolFull: a request the draft model's pool cannot hold runs
// undrafted, its output unchanged, and the pool ends empty (startEngine
// checks); a request that fits drafts in the same engine afterwards.
func TestDraftModelPoolFull(t *testing.T) {
	m := loadModel(t, "gguf")
	long := Request{Prompt: strings.Repeat("Tim and Sam went to the park. ", 8), MaxTokens: 30}
	short := Request{Prompt: "Lily", MaxTokens: 30}
	plain := startEngine(t, m, engineOpts{blocks: 64})
	want := []result{run(t, plain, long), run(t, plain, short)}
	e := startEngine(t, m, engineOpts{blocks: 64, spec: SpecConfig{Method: "draft", MaxBatch: 16, Ungated: true},
		draft: m, draftBlocks: 4}) // 64 tokens: the long prompt never fits
	for i, r := range []Request{long, short} {
		got := run(t, e, r)
		if got.text != want[i].text {
			t.Errorf("request %d with a full draft pool:\n %q\nwithout drafting:\n %q", i, got.text, want[i].text)
		}
		st := e.Stats()
		if i == 0 && st.SpecDrafted != 0 {
			t.Errorf("the long request drafted %d tokens from a pool that cannot hold it", st.SpecDrafted)
		}
		if i == 1 && st.SpecDrafted == 0 {
			t.Errorf("the short request, which fits, drafted nothing")
		}
	}
}

// TestDraftModelSharesPrefixes: the draft model's pool is a prefix cache
// of its own, so a second request with the first's prompt does not
// prefill it into the draft again; its output is still the target's.
func TestDraftModelSharesPrefixes(t *testing.T) {
	m := loadModel(t, "gguf")
	r := Request{Prompt: strings.Repeat("Tim and Sam went to the park. ", 6), MaxTokens: 20}
	want := run(t, startEngine(t, m, engineOpts{blocks: 64}), r)
	e := startEngine(t, m, engineOpts{blocks: 64, blockSize: 8, spec: SpecConfig{Method: "draft", MaxBatch: 16, Ungated: true}, draft: m})
	for i := range 2 {
		if got := run(t, e, r); got.text != want.text {
			t.Fatalf("run %d with a draft model:\n %q\nwithout:\n %q", i, got.text, want.text)
		}
		// The loop touches the draft pool only for running requests, and
		// this one's end was pushed after it let go of its blocks.
		u := e.spec.drafter.pool.Usage()
		if i == 0 && u.Hits != 0 || i == 1 && u.Hits < uint64(want.done.Usage.PromptTokens/2) {
			t.Errorf("run %d: the draft's prefix cache served %d of %d tokens looked up", i, u.Hits, u.Queries)
		}
	}
}

// TestDraftTimingLeavesOutCatchUps: the draft passes the gate is told
// about are the plain ones (one token a sequence). A request's first
// drafting step prefills its prompt into the draft in its first pass,
// which is not counted: the gate would otherwise take the once-only
// catch-up for what drafting costs every step, and keep itself shut.
func TestDraftTimingLeavesOutCatchUps(t *testing.T) {
	m := loadModel(t, "gguf")
	be, err := cpuNew(m, backend.Options{NumBlocks: 32, BlockSize: 16, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	dbe, err := cpuNew(m, backend.Options{NumBlocks: 32, BlockSize: 16, Threads: 1, ShareThreads: be})
	if err != nil {
		t.Fatal(err)
	}
	defer dbe.Close()
	e, err := New(Options{Model: m, Backend: be, NumBlocks: 32, Speculative: SpecConfig{Method: "draft",
		Draft: &DraftModel{Model: m, Backend: dbe, NumBlocks: 32}}})
	if err != nil {
		t.Fatal(err)
	}
	prompt := m.Tokenizer.Encode("Once upon a time, in a land far away, there lived", true)
	seq := &sched.Sequence{ID: 1, Tokens: prompt, PromptLen: len(prompt), MaxTokens: 64}
	if _, passes := e.proposeDraft([]*sched.Sequence{seq}, []int{4}); passes != 3 || len(seq.Draft) != 4 {
		t.Fatalf("first drafting step: %d plain passes and %d drafts, want 3 (the prompt's pass left out) and 4", passes, len(seq.Draft))
	}
	// The target kept three drafts and picked a token of its own: the
	// draft holds all but that one, so the next step is plain passes only.
	seq.Tokens = append(append([]int(nil), prompt...), seq.Draft[0], seq.Draft[1], seq.Draft[2], 0)
	seq.Draft = seq.Draft[:0]
	if _, passes := e.proposeDraft([]*sched.Sequence{seq}, []int{4}); passes != 4 || len(seq.Draft) != 4 {
		t.Fatalf("caught-up step: %d plain passes and %d drafts, want 4 and 4", passes, len(seq.Draft))
	}
	e.spec.drafter.ended(seq.ID)
}
