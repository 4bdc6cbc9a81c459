package hwprofile

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Profile holds the defaults for one class of device.
type Profile struct {
	Name string `toml:"name" json:"name"`
	// Match: a GPU whose name contains any of these (case-insensitive) and
	// whose memory lies in [MinMemGB, MaxMemGB] (0 = unbounded). The CPU
	// profile has Device "cpu" and matches when no GPU is used.
	Device   string   `toml:"device" json:"device"` // "gpu" or "cpu"
	Names    []string `toml:"names" json:"names,omitempty"`
	MinMemGB float64  `toml:"min_mem_gb" json:"min_mem_gb,omitempty"`
	MaxMemGB float64  `toml:"max_mem_gb" json:"max_mem_gb,omitempty"`
	Unified  bool     `toml:"unified_memory" json:"unified_memory,omitempty"` // Jetson-class: GPU memory is system memory

	MemoryUtilization   float64 `toml:"memory_utilization" json:"memory_utilization"` // share of memory batchd may use
	Headroom            float64 `toml:"headroom" json:"headroom"`                     // share of the KV budget kept free; default 0.2
	BlockSize           int     `toml:"block_size" json:"block_size"`
	MaxNumSeqs          int     `toml:"max_num_seqs" json:"max_num_seqs"`
	MaxNumBatchedTokens int     `toml:"max_num_batched_tokens" json:"max_num_batched_tokens"`
	Threads             int     `toml:"threads" json:"threads"` // CPU threads; 0 = all cores
}

// BuiltinProfiles is the table shipped in the binary, most specific first.
func BuiltinProfiles() []Profile {
	return []Profile{
		{Name: "h200-h100", Device: "gpu", Names: []string{"H200", "H100", "GH200", "H800", "H20"}, MinMemGB: 75,
			MemoryUtilization: 0.90, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 256, MaxNumBatchedTokens: 8192},
		{Name: "a100-80gb", Device: "gpu", Names: []string{"A100", "A800"}, MinMemGB: 70,
			MemoryUtilization: 0.90, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 256, MaxNumBatchedTokens: 8192},
		{Name: "a100-40gb", Device: "gpu", Names: []string{"A100", "A800"}, MaxMemGB: 70,
			MemoryUtilization: 0.90, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 128, MaxNumBatchedTokens: 4096},
		{Name: "l40s-48gb", Device: "gpu", Names: []string{"L40", "A6000", "A40", "6000 Ada"}, MinMemGB: 40,
			MemoryUtilization: 0.90, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 128, MaxNumBatchedTokens: 4096},
		{Name: "jetson-unified", Device: "gpu", Names: []string{"Orin", "Xavier", "Jetson", "Thor"}, Unified: true,
			MemoryUtilization: 0.60, Headroom: 0.25, BlockSize: 16, MaxNumSeqs: 16, MaxNumBatchedTokens: 512},
		{Name: "l4-24gb", Device: "gpu", Names: []string{"L4", "A10"}, MinMemGB: 20, MaxMemGB: 30,
			MemoryUtilization: 0.90, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 64, MaxNumBatchedTokens: 2048},
		{Name: "consumer-24gb", Device: "gpu", MinMemGB: 20, MaxMemGB: 36,
			MemoryUtilization: 0.85, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 64, MaxNumBatchedTokens: 2048},
		{Name: "gpu-16gb", Device: "gpu", MinMemGB: 10, MaxMemGB: 20,
			MemoryUtilization: 0.85, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 32, MaxNumBatchedTokens: 1024},
		{Name: "gpu-large", Device: "gpu", MinMemGB: 36,
			MemoryUtilization: 0.90, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 128, MaxNumBatchedTokens: 4096},
		{Name: "gpu-small", Device: "gpu",
			MemoryUtilization: 0.80, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 16, MaxNumBatchedTokens: 512},
		{Name: "cpu", Device: "cpu",
			MemoryUtilization: 0.50, Headroom: 0.2, BlockSize: 16, MaxNumSeqs: 32, MaxNumBatchedTokens: 512},
	}
}

// LoadProfiles reads every *.toml in dir ([[profile]] tables) and returns
// them ahead of the built-in ones, so that a file's profile wins. A missing
// dir is not an error.
func LoadProfiles(dir string) ([]Profile, error) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
	sort.Strings(files)
	var out []Profile
	for _, f := range files {
		var doc struct {
			Profile []Profile `toml:"profile"`
		}
		if _, err := toml.DecodeFile(f, &doc); err != nil {
			return nil, fmt.Errorf("profiles %s: %w", f, err)
		}
		for i, p := range doc.Profile {
			if err := p.check(); err != nil {
				return nil, fmt.Errorf("profiles %s: profile %d (%q): %w", f, i, p.Name, err)
			}
		}
		out = append(out, doc.Profile...)
	}
	if _, err := os.Stat(dir); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	return append(out, BuiltinProfiles()...), nil
}

func (p *Profile) check() error {
	switch {
	case p.Name == "":
		return fmt.Errorf("no name")
	case p.Device != "gpu" && p.Device != "cpu":
		return fmt.Errorf("device %q: want gpu or cpu", p.Device)
	case p.MemoryUtilization <= 0 || p.MemoryUtilization > 1:
		return fmt.Errorf("memory_utilization %v: want (0, 1]", p.MemoryUtilization)
	case p.Headroom < 0 || p.Headroom >= 1:
		return fmt.Errorf("headroom %v: want [0, 1)", p.Headroom)
	case p.BlockSize <= 0 || p.MaxNumSeqs <= 0 || p.MaxNumBatchedTokens <= 0 || p.Threads < 0:
		return fmt.Errorf("block_size, max_num_seqs, max_num_batched_tokens must be positive")
	}
	return nil
}

func (p *Profile) matches(g *GPU) bool {
	if p.Device != "gpu" {
		return false
	}
	gb := float64(g.MemTotal) / (1 << 30)
	if (p.MinMemGB > 0 && gb < p.MinMemGB) || (p.MaxMemGB > 0 && gb > p.MaxMemGB) {
		return false
	}
	if len(p.Names) == 0 {
		return true
	}
	for _, n := range p.Names {
		if strings.Contains(strings.ToLower(g.Name), strings.ToLower(n)) {
			return true
		}
	}
	return false
}

// Choose picks the profile for a GPU (nil: the CPU profile).
func Choose(profiles []Profile, g *GPU) Profile {
	for _, p := range profiles {
		if g != nil && p.matches(g) {
			return p
		}
		if g == nil && p.Device == "cpu" {
			return p
		}
	}
	return BuiltinProfiles()[len(BuiltinProfiles())-1]
}
