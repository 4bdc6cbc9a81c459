// Package hwprofile detects the machine (NVIDIA GPUs through NVML, the CPU
// and memory otherwise), picks a hardware profile from a built-in table that
// files may override, and plans the KV cache and batch limits for a model
// from the memory there is.
//
// Invariants kept: a failed or hung probe falls back to the next prober with
// its reason kept, never takes the process down (after a failed nvml.Init no
// other NVML call is made); a user's setting that does not fit is clamped and
// reported (Plan.Warnings), never silently changed.
package hwprofile
