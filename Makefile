# batchd build, run and test entry points. See README.md.
SHELL := /bin/bash
GO ?= go
BIN := bin
MODELS ?= ../shared/models
# The model `make run` serves: BATCHD_MODEL if set, else the shared stories260K
# checkpoint, else a random-weight demo model made by testing/modelgen.
BATCHD_MODEL ?= $(if $(wildcard $(MODELS)/stories260K.bin),$(MODELS)/stories260K.bin,build/demo.gguf)
BATCHD_TOKENIZER ?= $(if $(filter %.bin,$(BATCHD_MODEL)),$(MODELS)/tok512.bin,)
PROMPT ?= Once upon a time

.PHONY: build run test bench lint demo-model clean

build:
	$(GO) build -o $(BIN)/batchd ./cmd/batchd

build/demo.gguf:
	@mkdir -p build
	@echo "no real model configured: generating a random-weight demo model (its text is gibberish)"
	$(GO) run ./testing/modelgen --out $@ --dim 256 --layers 4 --heads 8 --ffn 768 --vocab 4096 --ctx 512 --dtype f32 --seed 1

demo-model: build/demo.gguf

run: build $(if $(filter build/demo.gguf,$(BATCHD_MODEL)),build/demo.gguf)
	$(BIN)/batchd generate --model $(BATCHD_MODEL) $(if $(BATCHD_TOKENIZER),--tokenizer $(BATCHD_TOKENIZER)) \
		--prompt "$(PROMPT)" --max-tokens 200

test:
	$(GO) test -race ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x ./engine/...

lint:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN) build
