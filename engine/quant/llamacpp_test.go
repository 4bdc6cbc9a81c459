package quant

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/engine/model/gguf"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestDequantizationMatchesLlamaCpp: for every file in models/quant,
// every tensor batchd dequantizes is bit-identical to llama.cpp's own
// dequantization of it (the F32 twin make-dequant-twins.sh writes with
// llama-quantize).
func TestDequantizationMatchesLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "quant")
	script := filepath.Join(dir, "make-dequant-twins.sh")
	if _, err := os.Stat(script); err != nil {
		t.Skip("no models/quant/make-dequant-twins.sh")
	}
	twins := t.TempDir()
	if out, err := exec.Command("bash", script, twins).CombinedOutput(); err != nil {
		t.Skipf("cannot make the twins (llama-quantize): %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tiny-quant-*.gguf"))
	for _, p := range files {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		if name == "tiny-quant-base-f32" {
			continue
		}
		t.Run(strings.TrimPrefix(name, "tiny-quant-"), func(t *testing.T) {
			q, qb := parse(t, p)
			tw, tb := parse(t, filepath.Join(twins, name+".dequant-f32.gguf"))
			checked := map[string]int{}
			for _, qt := range q.Tensors {
				f := Lookup(DType(qt.Type))
				if f == nil {
					t.Errorf("tensor %s: type %s has no entry", qt.Name, qt.Type)
					continue
				}
				twt, ok := tw.Tensor(qt.Name)
				if !ok {
					t.Fatalf("twin lacks %s", qt.Name)
				}
				n := int(twt.Size / 4)
				got := make([]float32, n)
				f.Dequantize(qb[q.DataOffset+qt.Offset:][:qt.Size], got)
				want := tb[tw.DataOffset+twt.Offset:][:twt.Size]
				for i := range got {
					w := math.Float32frombits(uint32(want[4*i]) | uint32(want[4*i+1])<<8 | uint32(want[4*i+2])<<16 | uint32(want[4*i+3])<<24)
					if math.Float32bits(got[i]) != math.Float32bits(w) {
						t.Fatalf("%s (%s) element %d: %v (%#x), llama.cpp %v (%#x)", qt.Name, qt.Type, i, got[i],
							math.Float32bits(got[i]), w, math.Float32bits(w))
					}
				}
				checked[DType(qt.Type).String()]++
			}
			t.Logf("bit-identical tensors by type: %v", checked)
		})
	}
}

func parse(t *testing.T, path string) (*gguf.File, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// TestQuantizersMatchLlamaCpp: every tensor llama-quantize wrote in
// models/quant (from tiny-quant-base-f32, no importance matrix) is what
// batchd's quantizer writes from the same float32 values, byte for byte.
func TestQuantizersMatchLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "quant")
	base := filepath.Join(dir, "tiny-quant-base-f32.gguf")
	if _, err := os.Stat(base); err != nil {
		t.Skip("no models/quant/tiny-quant-base-f32.gguf")
	}
	bf, bb := parse(t, base)
	files, _ := filepath.Glob(filepath.Join(dir, "tiny-quant-*.gguf"))
	covered := map[DType]int{}
	for _, p := range files {
		if p == base {
			continue
		}
		q, qb := parse(t, p)
		for _, qt := range q.Tensors {
			dt := DType(qt.Type)
			f := Lookup(dt)
			st, ok := bf.Tensor(qt.Name)
			if f == nil || f.Quantize == nil || !ok || DType(st.Type) != F32 || dt == F32 {
				continue
			}
			raw := bb[bf.DataOffset+st.Offset:][:st.Size]
			src := make([]float32, len(raw)/4)
			for i := range src {
				src[i] = math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
			}
			got := make([]byte, qt.Size)
			f.Quantize(src, got)
			want := qb[q.DataOffset+qt.Offset:][:qt.Size]
			if i := firstDiff(got, want); i >= 0 {
				blk := i / f.BlockBytes
				t.Errorf("%s: %s (%s): byte %d (block %d) is %#x, llama.cpp's %#x", filepath.Base(p), qt.Name, dt, i, blk, got[i], want[i])
				continue
			}
			covered[dt]++
		}
	}
	for dt, f := range formats {
		if f.Quantize != nil && dt != F32 && covered[dt] == 0 {
			t.Logf("%s: no tensor of this type in models/quant to compare with", dt)
		}
	}
	t.Logf("tensors byte-identical to llama-quantize, by type: %v", covered)
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
