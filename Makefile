# Generation job service. `make run` serves the API locally, `make test` runs
# every check a fresh machine can run; both install what they need.
SHELL := /bin/bash
GO ?= go
LOCAL := $(CURDIR)/.local
TOOLS := $(LOCAL)/bin
STATICCHECK_VERSION := v0.8.2

FUZZTIME ?= 20s

# The deployed build: linux/arm64, no RPC shim, no paths, no symbols.
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'
FUNCTIONS := $(notdir $(wildcard functions/*))
# The size budget of one function's deployed binary; the worker carries the
# image codecs and engines, and has a budget of its own.
MAX_BINARY_BYTES := 12000000
WORKER_MAX_BINARY_BYTES := 16000000
# The deliverer carries the KMS client and the JWT code on top of the rest;
# the provider and callbacks functions the Secrets Manager client and the
# provider adapters (docs/providers.md), and the mcp function the handlers of
# generate, jobs, usage and styles together with the MCP SDK (docs/mcp.md):
# the same budget.
DELIVERER_MAX_BINARY_BYTES := 13000000
# The console carries the Cognito, DynamoDB, SQS and Secrets Manager clients,
# stripe-go, and the playground's creation path (catalog, schema validator,
# price list); its pages are templ components, so no template execution
# (reflect's MethodByName) keeps every method of the AWS clients it links.
# 13.4 MB today, 1.05 MB of it stripe-go's API backend (the error type it
# decodes reaches most of stripe-go's types): this budget leaves the 1 MB
# spare and constrains the rest (docs/performance.md, "Binary sizes and cold
# starts").
CONSOLE_MAX_BINARY_BYTES := 15000000
# Every function keeps this much of its budget free, so that a dependency's
# growth is noticed before a deploy breaks: sizes fails a function that
# does not (docs/performance.md, "Binary sizes and cold starts").
MIN_SPARE_BYTES := 1000000

.PHONY: run test lint repocheck vet staticcheck templ templ-check unit jose mcp-client chromium fuzz openapi-lint sizes bench bench-enhance bench-creation bench-providers build invoke reset deploy clean python-aws cfn-lint rehearsal

# PYTHON_AWS is the Python that has AWS's own tools (cfn-lint,
# aws-sam-translator, moto with its server): the first python3 on PATH that
# can import moto, else a pyenv one that can, else the first python3 on PATH
# (python-aws then installs what it lacks with pip). Override it to choose.
PYTHON_AWS ?= $(shell for p in $$(which -a python3 2>/dev/null) $$(ls -d $$HOME/.pyenv/versions/*/bin/python3 2>/dev/null); do \
	"$$p" -c 'import moto' 2>/dev/null && { echo "$$p"; exit; }; done; command -v python3)
PYTHON_AWS_MODULES := cfnlint samtranslator moto boto3 yaml flask

# The runner is built and exec'd, so that it is make's own child: make
# passes a SIGTERM on to it, and it stops the emulators (go run would die and
# leave them serving). RUN_FLAGS: -v, -state DIR.
RUN_FLAGS ?=
run:
	@mkdir -p $(TOOLS) && $(GO) build -o $(TOOLS)/local ./infra/local && exec $(TOOLS)/local $(RUN_FLAGS)

test: lint repocheck cfn-lint rehearsal unit fuzz openapi-lint sizes

# Installs AWS's Python tools where they are missing (the machine image has
# them; a developer's machine reaches PyPI).
python-aws:
	@test -n "$(PYTHON_AWS)" || { echo "no python3 on PATH: cfn-lint, the SAM translator and moto need Python 3"; exit 1; }
	@missing=$$(for m in $(PYTHON_AWS_MODULES); do $(PYTHON_AWS) -c "import $$m" 2>/dev/null || echo $$m; done); \
	if [ -n "$$missing" ]; then \
		echo "$(PYTHON_AWS) lacks: $$missing; installing with pip"; \
		$(PYTHON_AWS) -m pip install --quiet cfn-lint aws-sam-translator 'moto[server]' boto3 pyyaml || \
			{ echo "pip could not install them into $(PYTHON_AWS): install cfn-lint, aws-sam-translator and moto[server], or set PYTHON_AWS"; exit 1; }; \
	fi

# template.yaml against CloudFormation's and SAM's rules, the informational
# ones included (I3011: explicit deletion policies on stateful resources).
cfn-lint: python-aws
	$(PYTHON_AWS) -c 'import sys; from cfnlint.runner import main; sys.exit(main())' template.yaml --include-checks I

# The SAM transform, cfn-lint on its output, and the stack created, updated
# and deleted in moto's CloudFormation (its own moto_server, a free port).
rehearsal: python-aws
	$(PYTHON_AWS) infra/tools/rehearsal/rehearse.py template.yaml

lint: vet staticcheck templ-check
	@unformatted=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go' ':!third_party')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi

# The repository itself, first because it takes a second: no tracked build
# output (an executable, a file over 1 MB outside testdata/), no mention of
# documents outside the repository, every pointer into docs/ leads somewhere,
# no function linking an AWS client (or the catalog, or the engines) it does
# not use.
# go test ./... runs the same tests again.
repocheck:
	$(GO) test -count=1 ./infra/repocheck

# PACKAGES are the service's and the Go client's: the client is a module of
# its own (client/go.mod), which ./... does not reach; go.work joins them.
PACKAGES := ./... ./client/...

vet:
	$(GO) vet $(PACKAGES)

# The console's pages are templ components (internal/console/pages,
# docs/console.md, "Pages"): `make templ` compiles each .templ file to the
# _templ.go beside it, which is committed; templ-check fails when that
# would change anything, or when a .templ file is not in templ's format.
# The generator is the version of the runtime go.mod requires, fetched
# through the module proxy like any module.
TEMPL = $(GO) run github.com/a-h/templ/cmd/templ@$(shell $(GO) list -m -f '{{.Version}}' github.com/a-h/templ)
TEMPL_DIRS := internal/console/pages

templ:
	$(TEMPL) fmt $(TEMPL_DIRS)
	$(TEMPL) generate -path $(TEMPL_DIRS)

templ-check:
	$(TEMPL) fmt -fail $(TEMPL_DIRS)
	$(TEMPL) generate -check -path $(TEMPL_DIRS)

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(TOOLS)/staticcheck
	$(TOOLS)/staticcheck $(PACKAGES)

# One pair of emulators for the whole run; every test makes its own table and queue.
unit: jose mcp-client chromium
	CHROMIUM=$(CHROMIUM) $(GO) run ./infra/local exec -- $(GO) test -race -count=1 -timeout 20m $(PACKAGES)

# The console's browser test drives Debian's chromium (infra/e2e/console,
# TestTheConsoleInABrowser); installed here where it is missing, as root
# (through sudo otherwise). CHROMIUM names another build.
CHROMIUM ?= /usr/bin/chromium
chromium:
	@test -x $(CHROMIUM) || { \
		echo "installing Debian's chromium for the console's browser test"; \
		if [ "$$(id -u)" -eq 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq chromium; fi; }

# The npm package jose verifies webhook signatures independently of our Go
# code (internal/signing's tests); pinned by its package-lock.json.
jose:
	cd internal/signing/testdata && npm ci --no-audit --no-fund --silent

# The MCP server's tests drive it with the protocol's own TypeScript SDK too,
# a client independent of the Go SDK (infra/e2e/mcp); pinned by its
# package-lock.json.
mcp-client:
	cd infra/e2e/mcp/testdata && npm ci --no-audit --no-fund --silent

# A bounded fuzz run of the generation request decoder.
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./internal/catalog

openapi-lint:
	@mkdir -p $(LOCAL)
	$(GO) run ./infra/local openapi > $(LOCAL)/openapi.json
	cd infra/lint && npm ci --no-audit --no-fund --silent && npx --no-install redocly lint --extends recommended $(LOCAL)/openapi.json

# BENCH_FLAGS: -soak 2m (the soak's length; 0 for none), -soak-rate 80, -soak-only.
# Then the model providers' figures (docs/performance.md, "Model providers").
BENCH_FLAGS ?=
bench:
	$(GO) run ./infra/bench $(BENCH_FLAGS)
	$(MAKE) bench-providers

# Only the model providers: callback -> completed (1 MiB output) p50/p99 for
# Replicate, fal and Cog, and creation -> completed through the Cog model
# server vs the in-process worker.
bench-providers:
	$(GO) run ./infra/local exec -- $(GO) test -run '^$$' -bench 'CallbackToCompleted|CogServerVsEngine' -benchtime 20x ./internal/provider/

# Only the enhance engine against libvips (make bench includes it).
bench-enhance:
	$(GO) run ./infra/bench enhance

# Only job creation against raw DynamoDB Local writes (make bench includes it).
bench-creation:
	$(GO) run ./infra/bench creation

# The reference engines served over Cog's HTTP protocol on 127.0.0.1:5050, one
# model per endpoint (docs/cogserver.md), outputs uploaded to the server's own
# /uploads/ so that callbacks stay small. COGSERVER_FLAGS="-webhook-token T".
.PHONY: cogserver
COGSERVER_PORT ?= 5050
COGSERVER_FLAGS ?=
cogserver:
	$(GO) run ./cmd/cogserver -port $(COGSERVER_PORT) -upload-url http://127.0.0.1:$(COGSERVER_PORT)/uploads/ $(COGSERVER_FLAGS)

# `make invoke FN=generate EVENT=events/generate-valid.json` runs one function's
# handler on one event against the local stack (`make run` must be up).
invoke:
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<function> EVENT=<file>"; exit 2; }
	$(GO) run ./infra/local invoke $(FN) $(EVENT)

build:
	@for fn in $(FUNCTIONS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o bin/$$fn/bootstrap ./functions/$$fn || exit 1; \
	done

# Every deployed binary stays under its budget by MIN_SPARE_BYTES (make bench
# shows the sizes too).
sizes: build
	@for fn in $(FUNCTIONS); do \
		size=$$(stat -c %s bin/$$fn/bootstrap); echo "$$fn: $$size bytes (linux/arm64)"; \
		budget=$(MAX_BINARY_BYTES); \
		case $$fn in worker|lightworker) budget=$(WORKER_MAX_BINARY_BYTES);; deliverer|provider|callbacks|mcp) budget=$(DELIVERER_MAX_BINARY_BYTES);; console) budget=$(CONSOLE_MAX_BINARY_BYTES);; esac; \
		[ $$size -lt $$budget ] || { echo "$$fn is over the $$budget-byte budget"; exit 1; }; \
		[ $$(( budget - size )) -ge $(MIN_SPARE_BYTES) ] || { echo "$$fn has less than $(MIN_SPARE_BYTES) bytes to spare under its $$budget-byte budget"; exit 1; }; \
	done

reset:
	rm -rf $(LOCAL)

deploy:
	sam build && sam deploy --guided

clean:
	rm -rf bin .aws-sam

# sam build (BuildMethod: makefile) calls build-<LogicalId> with ARTIFACTS_DIR set.
define lambda_build
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/$(1)
endef

build-GenerateFunction:
	$(call lambda_build,generate)
build-JobsFunction:
	$(call lambda_build,jobs)
build-UsageFunction:
	$(call lambda_build,usage)
build-JwksFunction:
	$(call lambda_build,jwks)
build-OAuthFunction:
	$(call lambda_build,oauth)
build-DelivererFunction:
	$(call lambda_build,deliverer)
build-NotifierFunction:
	$(call lambda_build,notifier)
build-OpenAPIFunction:
	$(call lambda_build,openapi)
build-NotFoundFunction:
	$(call lambda_build,notfound)
build-AssetsFunction:
	$(call lambda_build,assets)
build-StylesFunction:
	$(call lambda_build,styles)
build-WorkerFunction:
	$(call lambda_build,worker)
build-LightWorkerFunction:
	$(call lambda_build,lightworker)
build-SweeperFunction:
	$(call lambda_build,sweeper)
build-ProviderFunction:
	$(call lambda_build,provider)
build-CallbacksFunction:
	$(call lambda_build,callbacks)
build-MCPFunction:
	$(call lambda_build,mcp)
build-ConsoleFunction:
	$(call lambda_build,console)
build-StripeWebhookFunction:
	$(call lambda_build,stripewebhook)
