package quant

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batchd/batchd/gguf"
	"github.com/batchd/batchd/testing/llamacpp"
	"github.com/batchd/batchd/testing/testmodels"
)

// TestDequantizationMatchesLlamaCpp: for every file in models/quant,
// every tensor batchd dequantizes is bit-identical to llama.cpp's own
// dequantization of it: the F32 twin llama_model_quantize writes (as
// llama-quantize --allow-requantize F32 does), from llama.cpp v0.5.0.
func TestDequantizationMatchesLlamaCpp(t *testing.T) {
	dir := filepath.Join(testmodels.Dir(t), "quant")
	files, _ := filepath.Glob(filepath.Join(dir, "tiny-quant-*.gguf"))
	if len(files) == 0 {
		t.Skip("no models/quant files")
	}
	ref := llamacpp.New(t, llamacpp.Options{})
	twins := t.TempDir()
	for _, p := range files {
		name := strings.TrimSuffix(filepath.Base(p), ".gguf")
		if name == "tiny-quant-base-f32" {
			continue
		}
		t.Run(strings.TrimPrefix(name, "tiny-quant-"), func(t *testing.T) {
			twin := filepath.Join(twins, name+".dequant-f32.gguf")
			if err := ref.Quantize(p, twin, 0, 2, true); err != nil {
				t.Fatal(err)
			}
			q, qb := parse(t, p)
			tw, tb := parse(t, twin)
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
	files, _ := filepath.Glob(filepath.Join(dir, "tiny-quant-*.gguf"))
	covered := map[DType]int{}
	for _, p := range files {
		if p != base {
			compareQuantized(t, base, p, covered)
		}
	}
	for dt, f := range formats {
		if f.Quantize != nil && dt != F32 && covered[dt] == 0 {
			t.Logf("%s: no tensor of this type in models/quant to compare with", dt)
		}
	}
	t.Logf("tensors byte-identical to llama-quantize, by type: %v", covered)
}

// llamaFtypes are llama.cpp's enum llama_ftype values for every format
// batchd quantizes, the K-quants as their mixes.
var llamaFtypes = map[string]int{"F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q5_0": 8, "Q5_1": 9, "Q2_K": 10,
	"Q3_K_S": 11, "Q3_K_M": 12, "Q4_K_S": 14, "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18,
	"IQ4_NL": 25, "IQ4_XS": 30, "BF16": 32}

// TestQuantizersMatchLlamaCppLive: llama.cpp v0.5.0's llama_model_quantize
// writes the base file in every format, and batchd's quantizer gives its
// bytes for every tensor, now (the stored files were made by an older
// build).
func TestQuantizersMatchLlamaCppLive(t *testing.T) {
	base := filepath.Join(testmodels.Dir(t), "quant", "tiny-quant-base-f32.gguf")
	if _, err := os.Stat(base); err != nil {
		t.Skip("no models/quant/tiny-quant-base-f32.gguf")
	}
	ref := llamacpp.New(t, llamacpp.Options{})
	covered := map[DType]int{}
	for name, ft := range llamaFtypes {
		out := filepath.Join(t.TempDir(), name+".gguf")
		if err := ref.Quantize(base, out, ft, 2, false); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		compareQuantized(t, base, out, covered)
	}
	for dt, f := range formats {
		// MXFP4 is only ever an expert format (llama.cpp's MXFP4_MOE leaves
		// dense files alone): backend/cpu's TestMXFP4MatchesLlamaCppLive
		// compares it on models/arch2's gpt-oss.
		if f.Quantize != nil && dt != F32 && dt != MXFP4 && covered[dt] == 0 {
			t.Errorf("%s: no tensor of this type was compared", dt)
		}
	}
	t.Logf("tensors byte-identical to llama.cpp %s, by type: %v", llamacpp.Release, covered)
}

// compareQuantized checks every quantized tensor of file p against
// batchd's quantizer of base's float32 values.
func compareQuantized(t *testing.T, base, p string, covered map[DType]int) {
	t.Helper()
	bf, bb := parse(t, base)
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

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
