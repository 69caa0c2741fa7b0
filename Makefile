# KQueen: `make` lists the recipes. Every recipe installs what it needs first (idempotent).
SHELL := /bin/bash
export RUSTUP_AUTO_INSTALL := 0
WASM_TC = $$(scripts/wasm-toolchain.sh | tail -1)
# The host crates `make test-rust` tests; `make test-bins` must select exactly the same to
# reuse that build (another selection resolves other features and recompiles).
TEST_CRATES = --workspace --exclude kqueen-frontend

.DEFAULT_GOAL := help
.PHONY: help setup setup-test run site site-debug build test-bins image-offline soak fakes fmt fmt-check imports code-tour clippy test-rust e2e api-fuzz test clean

help: ## List the recipes
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

setup: ## Install build tools (wasm32 std, wasm-bindgen, wasm-opt)
	scripts/setup.sh run

setup-test: ## Install build and test tools (adds Chromium, playwright-core)
	scripts/setup.sh test

site: setup ## Build the release wasm bundle, CSS and public/ into target/site
	scripts/build-site.sh --release

site-debug: setup ## Build a quick debug bundle into target/site
	scripts/build-site.sh

build: ## Build the server binary (target/debug/kqueen)
	cargo build -p kqueen-server

image-offline: site ## Write KQueen's image without a container builder (target/kqueen-image.tar)
	cargo build -p kqueen-server --profile production
	cargo run -q -p kqueen-testkit --example kqueen_image -- target/kqueen-image.tar target/production/kqueen target/site

soak: ## 10 minutes of mixed traffic at a fixed rate on SQLite, then PostgreSQL (figures printed)
	cargo bench -p kqueen-server --bench soak

fakes: ## Build the helpers the browser tests start (fake Kubernetes API server, TLS etcd)
	cargo build -p kqueen-testkit --example fake_kube --example tls_etcd --example kube_apiserver --example capi_lab

# The browser tests and the API fuzzer start target/debug/kqueen and the test kit's examples.
# `cargo test` builds both with the whole workspace's features (dev-dependencies included:
# tokio's test-util, ...); `cargo build -p …` resolves fewer and recompiled tokio and all
# that depends on it twice after `make test-rust` (6 minutes of CI). Built the tests' way,
# they are the artifacts `make test-rust` left.
test-bins: ## Build the debug server and the test kit's helpers as `make test-rust` builds them
	cargo test $(TEST_CRATES) --no-run

run: site ## Install everything and run the portal on SQLite at http://127.0.0.1:3000
	cargo build -p kqueen-server --profile serve
	target/serve/kqueen serve

fmt: ## Format the code
	cargo fmt --all

fmt-check: ## Check formatting
	cargo fmt --all --check

imports: ## No import cycles between the modules of any crate (scripts/imports.py)
	python3 scripts/imports.py

code-tour: ## README's code tour names every source file (scripts/code_tour.py)
	python3 scripts/code_tour.py

clippy: setup ## Lint the server side (ssr) and the wasm side (hydrate), warnings as errors
	cargo clippy --workspace --exclude kqueen-frontend --all-targets -- -D warnings
	cargo +$(WASM_TC) clippy -p kqueen-frontend --target wasm32-unknown-unknown -- -D warnings

test-rust: ## Unit and integration tests (SQLite and Postgres at 127.0.0.1:5432)
	cargo test $(TEST_CRATES)

e2e: setup-test site test-bins ## Browser tests, JavaScript off and on
	cd end2end && npm test

api-fuzz: setup-test ## The API fuzzer (schemathesis, pinned, every check) over /api/v1/openapi.json
	scripts/api-fuzz.sh

TEST_PHASES = setup-test fmt-check imports code-tour clippy test-rust e2e api-fuzz

test: ## Install everything and run every check and test (prints each phase's time)
	scripts/phases.sh $(TEST_PHASES)
	@echo "all checks and tests passed"

clean: ## Remove build output
	cargo clean
