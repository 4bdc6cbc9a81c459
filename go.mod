module github.com/batchd/batchd

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/fsnotify/fsnotify v1.10.1
	github.com/vmihailenco/msgpack/v5 v5.4.1
	golang.org/x/sys v0.50.0
)

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/coreos/go-systemd/v22 v22.6.0 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
)
