// Package envelope is the root of the envelope module. It holds the list
// of go:generate commands, which `go generate ./...` runs top to bottom:
// the demo envelope first, then everything generated from it; and the
// testdata files the demo embeds (Samples).
package envelope

// 1. demo envelope (baseline)
//go:generate go run ./cmd/envelope baseline --name ecs-native-50vu-baseline-mix --k6-options internal/demo/k6-options.json --out internal/demo/envelope.yaml internal/demo/runs/run-1.json internal/demo/runs/run-2.json internal/demo/runs/run-3.json internal/demo/runs/run-4.json internal/demo/runs/run-5.json
// 2. rules
//go:generate go run ./cmd/envelope rules --envelope internal/demo/envelope.yaml --out rules
// 3. docs/metrics.md
//go:generate go run ./internal/catalogue/docsgen -out docs/metrics.md
// 4. dashboards
//go:generate go run ./cmd/envelope dashboards --out dashboards
// 5. deploy files that embed rules and dashboards
//go:generate go run ./deploy/gen
