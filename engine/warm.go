package engine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/batchd/batchd/backend"
	"github.com/batchd/batchd/kvcache"
)

// warmState is what keeps the prefix cache warm: prefixes pinned in it
// (system prompts, few-shot blocks: prefilled at start and after a wake,
// never evicted) and the file that carries it across restarts and sleeps.
type warmState struct {
	file, identity string
	maxBytes       int64
	pins           [][]int
	pinIDs         []kvcache.SeqID
	repin          bool
}

// pinBase marks the block tables of pinned prefixes: no request id reaches it.
const pinBase = kvcache.SeqID(1 << 62)

// SetPins replaces the pinned prefixes: the old ones are released and
// these prefilled (from the next step, beside other work, in the bulk
// channel) and held in the prefix cache for good. After a wake they are
// prefilled again. Each prompt's full blocks are what a request sharing
// its start finds cached.
func (e *Engine) SetPins(prompts [][]int) {
	e.mu.Lock()
	e.warm.pins, e.warm.repin = prompts, true
	e.mu.Unlock()
	e.poke()
}

// pinnedBlocks returns how many KV blocks the pinned prefixes hold.
func (e *Engine) pinnedBlocks() int {
	n := 0
	for _, id := range e.warm.pinIDs {
		n += len(e.pool.Blocks(id))
	}
	return n
}

// applyPins runs in the loop: it releases the old pins and submits the
// new ones' prefills.
func (e *Engine) applyPins() {
	e.mu.Lock()
	repin, pins := e.warm.repin, e.warm.pins
	e.warm.repin = false
	e.mu.Unlock()
	if !repin {
		return
	}
	e.unpin()
	for i, toks := range pins {
		rs, err := e.submit(Request{Tokens: toks, Prefill: true, Channel: "bulk"})
		if err != nil {
			e.log.Warn("pinned prefix refused", "index", i, "tokens", len(toks), "err", err)
			continue
		}
		rs.pinAs = pinBase + kvcache.SeqID(i)
	}
}

// submit queues an engine-made request and returns its state (in the
// inbox until the loop's next turn).
func (e *Engine) submit(r Request) (*reqState, error) {
	st, err := e.Submit(context.Background(), r)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.live[st.ID()], nil
}

// unpin releases every pinned prefix's blocks to the cache's LRU.
func (e *Engine) unpin() {
	for _, id := range e.warm.pinIDs {
		e.pool.Free(id)
	}
	e.warm.pinIDs = nil
}

// prefilled ends a prefill-only request whose prompt is all computed (and
// its full blocks committed); a pin keeps its blocks.
func (e *Engine) prefilled(rs *reqState, now time.Time) {
	if rs.pinAs != 0 && e.pool.Rename(kvcache.SeqID(rs.seq.ID), rs.pinAs) {
		e.warm.pinIDs = append(e.warm.pinIDs, rs.pinAs)
	}
	if rs.firstToken.IsZero() {
		rs.firstToken = now
	}
	e.finish(rs, FinishStop, nil, now)
}

// cacheMagic starts a saved prefix cache; the format is: magic, the
// identity, then a section per block group (the main blocks, then a
// windowed pool's window blocks): block size, block bytes, a count and
// count blocks of (hash, K and V); then the recurrent states' section
// (warmstates.go); then the SHA-256 of everything before.
const cacheMagic = "batchd prefix cache 2\n"

// saveCache writes every indexed block to the cache file (atomically: a
// temporary file renamed over it), so a later start or wake reads it back.
func (e *Engine) saveCache(why string) {
	bs, ok := e.backend.(backend.BlockStore)
	if e.warm.file == "" || !ok || e.asleep.Load() {
		return
	}
	start := time.Now()
	n, err := e.writeCache(bs)
	if err != nil {
		e.log.Warn("prefix cache not saved", "file", e.warm.file, "why", why, "err", err)
		return
	}
	e.log.Info("prefix cache saved", "file", e.warm.file, "why", why, "blocks", n, "seconds", time.Since(start).Seconds())
}

// cached is one saved entry: a main block (one id) or a window block (an
// id per sliding group), and the hash it is indexed under.
type cached struct {
	ids  []int
	hash kvcache.Hash
}

// cachedSections is what the pool indexes: its main blocks, then (in a
// windowed pool) its window blocks.
func (e *Engine) cachedSections() [][]cached {
	var main []cached
	for _, b := range e.pool.Cached() {
		main = append(main, cached{[]int{b.ID}, b.Hash})
	}
	out := [][]cached{main}
	if e.pool.Windowed() {
		var win []cached
		for _, w := range e.pool.WindowCached() {
			win = append(win, cached{w.Blocks, w.Hash})
		}
		out = append(out, win)
	}
	return out
}

func (e *Engine) writeCache(bs backend.BlockStore) (int, error) {
	tmp, err := os.CreateTemp(filepath.Dir(e.warm.file), ".prefix-cache-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	sections := e.cachedSections()
	ss, states := e.keptStates()
	total := int64(len(states)) * int64(e.stateBytes())
	for _, sec := range sections {
		for _, c := range sec {
			total += int64(len(c.ids)) * int64(bs.BlockBytes())
		}
	}
	if e.warm.maxBytes > 0 && total > e.warm.maxBytes { // over the bound: the same most recent share of each
		for i, sec := range sections {
			sections[i] = sec[len(sec)-int(int64(len(sec))*e.warm.maxBytes/total):]
		}
		states = states[len(states)-int(int64(len(states))*e.warm.maxBytes/total):]
	}
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, h), 1<<20)
	head := []byte(cacheMagic)
	head = binary.LittleEndian.AppendUint32(head, uint32(len(e.warm.identity)))
	head = append(head, e.warm.identity...)
	_, err = w.Write(head)
	for i, sec := range sections {
		if err == nil {
			err = writeBlocks(w, bs, e.pool.BlockSize(), max(1, i*e.pool.WindowTables()), sec)
		}
	}
	if err == nil {
		err = writeStates(w, ss, states)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		_, err = tmp.Write(h.Sum(nil))
	}
	if err = errors.Join(err, tmp.Chmod(0o600), tmp.Close()); err != nil {
		return 0, err
	}
	return len(sections[0]), os.Rename(tmp.Name(), e.warm.file)
}

// writeBlocks writes one section: its geometry (tokens a block, bytes a
// block, blocks an entry, entries), then each entry's hash and blocks.
func writeBlocks(w io.Writer, bs backend.BlockStore, blockSize, per int, sec []cached) error {
	var head []byte
	for _, v := range []int{blockSize, bs.BlockBytes(), per, len(sec)} {
		head = binary.LittleEndian.AppendUint32(head, uint32(v))
	}
	_, err := w.Write(head)
	buf := make([]byte, bs.BlockBytes())
	for _, c := range sec {
		if err == nil {
			_, err = w.Write(c.hash[:])
		}
		for _, id := range c.ids {
			if err != nil {
				break
			}
			bs.ReadBlock(id, buf)
			_, err = w.Write(buf)
		}
	}
	return err
}

// loadCache reads the cache file into the empty pool. A file made for
// another identity or layout, or whose checksum fails, is ignored with a
// log line and nothing of it stays.
func (e *Engine) loadCache(why string) {
	bs, ok := e.backend.(backend.BlockStore)
	if e.warm.file == "" || !ok {
		return
	}
	if why == "start" { // a save cut short (the process killed mid-write) leaves its temporary file
		stale, _ := filepath.Glob(filepath.Join(filepath.Dir(e.warm.file), ".prefix-cache-*"))
		for _, f := range stale {
			_ = os.Remove(f)
		}
	}
	f, err := openTrusted(e.warm.file)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		var n int
		n, err = e.readCache(bufio.NewReaderSize(f, 1<<20), bs)
		f.Close()
		if err == nil {
			e.log.Info("prefix cache loaded", "file", e.warm.file, "why", why, "blocks", n)
			return
		}
	}
	e.pool.ResetCache()
	e.log.Warn("prefix cache file ignored", "file", e.warm.file, "why", why, "err", err)
}

// openTrusted opens the cache file only if no one but this process's user
// could have written it: a regular file (not a link) owned by the
// effective uid, writable by no one else, in a directory owned by that
// uid or root and writable by no one else. Its checksum proves it whole,
// not whose it is: a file planted by another user would give every
// request that hits its blocks that user's K/V.
func openTrusted(path string) (*os.File, error) {
	euid := uint32(os.Geteuid())
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	if uid, ok := ownerOf(dir); !ok || (uid != euid && uid != 0) || dir.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s is writable by other users or owned by another (mode %v): its cache file is not trusted",
			filepath.Dir(path), dir.Mode().Perm())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		if uid, ok := ownerOf(st); !ok || uid != euid || !st.Mode().IsRegular() || st.Mode().Perm()&0o022 != 0 {
			err = fmt.Errorf("the file is owned by uid %d with mode %v: only a file of this daemon's user (uid %d) that no one else can write is read",
				uid, st.Mode(), euid)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func ownerOf(st os.FileInfo) (uint32, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return sys.Uid, true
}

func (e *Engine) readCache(r io.Reader, bs backend.BlockStore) (int, error) {
	h := sha256.New()
	tr := io.TeeReader(r, h)
	magic := make([]byte, len(cacheMagic))
	if _, err := io.ReadFull(tr, magic); err != nil || string(magic) != cacheMagic {
		return 0, fmt.Errorf("not a prefix cache file (%v)", err)
	}
	idLen, err := readU32(tr)
	if err != nil || idLen > 1<<16 {
		return 0, fmt.Errorf("identity of %d bytes (%v)", idLen, err)
	}
	id := make([]byte, idLen)
	if _, err := io.ReadFull(tr, id); err != nil || string(id) != e.warm.identity {
		return 0, fmt.Errorf("made for %q, this engine is %q", id, e.warm.identity)
	}
	n := 0
	for _, window := range []bool{false, true} {
		if window && !e.pool.Windowed() {
			break
		}
		k, err := e.readBlocks(tr, bs, window)
		if err != nil {
			return 0, err
		}
		if !window {
			n = k
		}
	}
	states, err := e.readStates(tr)
	if err != nil {
		return 0, err
	}
	sum := h.Sum(nil)
	got := make([]byte, len(sum))
	if _, err := io.ReadFull(tr, got); err != nil || string(got) != string(sum) {
		return 0, fmt.Errorf("checksum mismatch: the file is damaged (%v)", err)
	}
	e.keepStates(states)
	return n, nil
}

// readBlocks reads one section (window: the window blocks') into the pool.
func (e *Engine) readBlocks(tr io.Reader, bs backend.BlockStore, window bool) (int, error) {
	var geo [4]uint32
	var err error
	for i := range geo {
		if geo[i], err = readU32(tr); err != nil {
			return 0, err
		}
	}
	per, adopt := 1, func(h kvcache.Hash) ([]int, bool) {
		id, ok := e.pool.Adopt(h)
		return []int{id}, ok
	}
	if window {
		per, adopt = e.pool.WindowTables(), e.pool.AdoptWindow
	}
	if int(geo[0]) != e.pool.BlockSize() || int(geo[1]) != bs.BlockBytes() || int(geo[2]) != per || int(geo[3])*per > e.pool.NumBlocks() {
		return 0, fmt.Errorf("%d entries of %d blocks of %d tokens and %d bytes: this pool has %d blocks of %d tokens, %d bytes, %d to an entry",
			geo[3], geo[2], geo[0], geo[1], e.pool.NumBlocks(), e.pool.BlockSize(), bs.BlockBytes(), per)
	}
	buf := make([]byte, per*bs.BlockBytes())
	var key kvcache.Hash
	n := 0
	for range geo[3] {
		if _, err := io.ReadFull(tr, key[:]); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(tr, buf); err != nil {
			return 0, err
		}
		if ids, ok := adopt(key); ok {
			for i, id := range ids {
				bs.WriteBlock(id, buf[i*bs.BlockBytes():(i+1)*bs.BlockBytes()])
			}
			n++
		}
	}
	return n, nil
}

func readU32(r io.Reader) (uint32, error) {
	var b [4]byte
	_, err := io.ReadFull(r, b[:])
	return binary.LittleEndian.Uint32(b[:]), err
}
