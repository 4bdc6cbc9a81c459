# batchd build, run and test entry points. See README.md.
SHELL := /bin/bash
GO ?= go
# go.mod needs Go 1.27 (github.com/ardanlabs/jinja); the go command fetches it
# through the module proxy when the machine's own Go is older.
export GOTOOLCHAIN ?= go1.27.3
# go-nvml's cgo wrappers call functions NVML marks deprecated; their warnings are noise.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
BIN := bin
MODELS ?= ../shared/models
# The model `make run` serves: BATCHD_MODEL if set, else the shared stories260K
# checkpoint, else a random-weight demo model made by testing/modelgen.
BATCHD_MODEL ?= $(if $(wildcard $(MODELS)/stories260K.bin),$(MODELS)/stories260K.bin,build/demo.gguf)
BATCHD_TOKENIZER ?= $(if $(filter %.bin,$(BATCHD_MODEL)),$(MODELS)/tok512.bin,)
SOCKET ?= $(CURDIR)/build/batchd.sock
HTTP_SOCKET ?= $(CURDIR)/build/http.sock

.PHONY: build run test bench bench-quant lint demo-model clean package package-test fuzz image

VERSION ?= 0.1.0
ARCH ?= $(shell $(GO) env GOARCH)
NFPM := build/tools/nfpm

build:
	$(GO) build -o $(BIN)/ ./cmd/batchd ./cmd/batchctl

# An OCI image without Docker (deploy/image): batchd, batchctl, glibc from
# Debian's libc6, a non-root user, no shell. Writes $(IMAGE_DIR)/oci (an OCI
# layout) and $(IMAGE_DIR)/batchd.tar (podman load, ctr images import).
IMAGE_DIR ?= build/image
# The image's binaries: stripped, their paths trimmed, and saying their version.
IMAGE_LDFLAGS := -s -w -X github.com/batchd/batchd/daemon.Version=$(VERSION) -X main.version=$(VERSION)
image:
	$(GO) build -trimpath -ldflags '$(IMAGE_LDFLAGS)' -o $(abspath $(IMAGE_DIR))/bin/ ./cmd/batchd ./cmd/batchctl
	bash deploy/image/stage.sh $(abspath $(IMAGE_DIR))/root $(abspath $(IMAGE_DIR))/bin
	cd deploy && $(GO) run ./cmd/mkimage -root $(abspath $(IMAGE_DIR))/root -oci $(abspath $(IMAGE_DIR))/oci \
		-tar $(abspath $(IMAGE_DIR))/batchd.tar -tag batchd:$(VERSION) -version $(VERSION)

build/demo.gguf:
	@mkdir -p build
	@echo "no real model configured: generating a random-weight demo model (its text is gibberish)"
	$(GO) run ./testing/modelgen --out $@ --dim 256 --layers 4 --heads 8 --ffn 768 --vocab 4096 --ctx 512 --dtype f32 --seed 1

demo-model: build/demo.gguf

run: build $(if $(filter build/demo.gguf,$(BATCHD_MODEL)),build/demo.gguf)
	@mkdir -p build
	@echo "batchd: serving $(BATCHD_MODEL) on $(SOCKET) (Ctrl-C stops it). In another terminal:"
	@echo "  bin/batchctl --socket $(SOCKET) generate 'Once upon a time' --max-tokens 100"
	@echo "  bin/batchctl --socket $(SOCKET) stats"
	@echo "  bin/batchctl --socket $(SOCKET) health"
	@echo "  curl --unix-socket $(HTTP_SOCKET) http://batchd/v1/completions -d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 50}'"
	$(BIN)/batchd serve --model $(BATCHD_MODEL) $(if $(BATCHD_TOKENIZER),--tokenizer $(BATCHD_TOKENIZER)) \
		--socket $(SOCKET) --http-socket $(HTTP_SOCKET)

PYTHON ?= /usr/bin/python3

# Tests that need the real model files skip without them; say so once here.
MODELS_HINT := $(if $(BATCHD_TEST_MODELS),$(BATCHD_TEST_MODELS),$(MODELS))
test: build
	@if [ ! -e "$(MODELS_HINT)/stories260K.bin" ]; then \
		echo "note: no model files in $(MODELS_HINT): tests that need real weights skip (set BATCHD_TEST_MODELS to run them)"; \
	fi
	# The CPU backend's suite takes about 8 minutes under the race detector
	# on 2 cores: past go test's default 10, a busy machine fails it.
	$(GO) test -race -timeout 30m ./...
	# The CPU backend's kernel, golden and exactness suites again with
	# AVX-512 and AVX-VNNI masked off: every path an AVX2-only CPU (AMD
	# Zen 2/3) runs, against llama.cpp's haswell build where they compare.
	$(GO) test -tags noavx512 ./backend/cpu ./quant
	$(GO) test -tags noavx512 -run 'Golden|LlamaCpp|Quant|Batching|Speculat|Constrained' ./engine
	# The chart and the image (deploy/, a module of its own so that Helm's
	# and Kubernetes' dependencies stay out of the daemon's).
	cd deploy && $(GO) test ./...
	@if $(PYTHON) -c 'import msgpack, pytest' 2>/dev/null; then \
		echo "BATCHD_BIN=$(CURDIR)/$(BIN)/batchd $(PYTHON) -m pytest -q clients/python/tests"; \
		BATCHD_BIN=$(CURDIR)/$(BIN)/batchd $(PYTHON) -m pytest -q clients/python/tests; \
	else \
		echo "skipping the Python client tests: apt-get install python3-msgpack python3-pytest (.ci/run does)"; \
	fi
	$(GO) test -run '^$$' -fuzz FuzzDecodeFrame -fuzztime 200000x ./ipc
	$(GO) test -run '^$$' -fuzz FuzzTemplateBudget -fuzztime 100x ./chat
	$(GO) test -run '^$$' -fuzz FuzzParseGBNF -fuzztime 20000x ./grammar
	$(GO) test -run '^$$' -fuzz FuzzSchemaGBNF -fuzztime 20000x ./grammar
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 20000x ./toolcall

# L110: the shape ../shared/BENCHMARKS.md measures llama.cpp on.
L110 := --dim 768 --layers 12 --heads 12 --ffn 2048 --vocab 32000 --ctx 1024 --seed 1 \
	$(if $(wildcard $(MODELS)/tokenizer32k.bin),--tokenizer $(MODELS)/tokenizer32k.bin)

build/l110-%.gguf:
	@mkdir -p build
	$(GO) run ./testing/modelgen --out $@ $(L110) --dtype $*

bench: build/l110-f32.gguf build/l110-q8_0.gguf
	$(GO) run ./testing/cmd/kernelbench --model build/l110-f32.gguf --json
	$(GO) run ./testing/cmd/kernelbench --model build/l110-q8_0.gguf --json

# batchd vs llama.cpp v0.5.0 (testing/llamacpp, from npm) on the same
# quantized L110 files (llama_model_quantize from the modelgen F32 file),
# interleaved: pp512 and decode at 1, 8 and 32 sequences. ISA=avx2 runs
# both with AVX-512 off.
bench-quant: build/l110-f32.gguf
	$(GO) run ./testing/cmd/quantbench --f32 build/l110-f32.gguf \
		--formats $(or $(FORMATS),Q4_K_M,Q4_0,Q5_K_M,Q6_K,Q8_0) --rounds $(or $(ROUNDS),3) \
		--quant-dot $(or $(QUANT_DOT),auto,float) $(if $(ISA),--isa $(ISA))

# Longer fuzzing than make test's (its seed corpora run as ordinary tests there).
# Budgets are exec counts, not durations: a duration races Go's fuzz coordinator
# at the deadline and fails with no crasher (golang/go#75804, fixed in Go 1.27).
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseGGUF -fuzztime 300000x ./model
	$(GO) test -run '^$$' -fuzz FuzzTokenize -fuzztime 20000x ./tokenizer
	$(GO) test -run '^$$' -fuzz FuzzDecodeFrame -fuzztime 2000000x ./ipc
	$(GO) test -run '^$$' -fuzz FuzzRequestBody -fuzztime 100000x ./httpapi
	$(GO) test -run '^$$' -fuzz FuzzTemplateBudget -fuzztime 2000x ./chat
	$(GO) test -run '^$$' -fuzz FuzzParseGBNF -fuzztime 1000000x ./grammar
	$(GO) test -run '^$$' -fuzz FuzzSchemaGBNF -fuzztime 1000000x ./grammar
	$(GO) test -run '^$$' -fuzz FuzzParser -fuzztime 1000000x ./toolcall

lint:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...

clean:
	rm -rf $(BIN) build

# nfpm v2.45.2 builds here from the Go module proxy (newer ones do not).
$(NFPM):
	GOBIN=$(CURDIR)/build/tools $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2

# Shipped binaries are stripped (-s -w), as distribution packages are.
# batchctl is static (no cgo); batchd links libc dynamically because NVML is
# dlopened through cgo, so the packages depend on the newest glibc symbol
# version it uses, read off the binary (what dpkg-shlibdeps would derive).
package: build $(NFPM)
	@mkdir -p build/pkg
	$(GO) build -trimpath -ldflags "-s -w -X github.com/batchd/batchd/daemon.Version=$(VERSION)" -o $(BIN)/ ./cmd/batchd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BIN)/ ./cmd/batchctl
	GLIBC_MIN=$$(objdump -T $(BIN)/batchd | grep -o 'GLIBC_[0-9.]*' | sed s/GLIBC_// | sort -V | tail -1); \
	test -n "$$GLIBC_MIN" || { echo "no glibc version found in $(BIN)/batchd"; exit 1; }; \
	echo "batchd needs glibc >= $$GLIBC_MIN"; \
	export GLIBC_MIN VERSION=$(VERSION) ARCH=$(ARCH); \
	$(NFPM) package --config packaging/nfpm.yaml --packager deb --target build/pkg/ && \
	$(NFPM) package --config packaging/nfpm.yaml --packager rpm --target build/pkg/

# A tiny random-weight model for the package test to serve.
build/pkgtest.gguf:
	@mkdir -p build
	$(GO) run ./testing/modelgen --out $@ --dim 64 --layers 2 --heads 4 --ffn 96 --vocab 300 --ctx 256 --dtype f32 --seed 1

# Installs, upgrades, removes and purges the .deb on this machine, and serves
# a request from the installed service (root; CI runs it).
package-test: package build/pkgtest.gguf
	bash packaging/test.sh build/pkg build/pkgtest.gguf
