package stack

import "github.com/envelope-dev/envelope/internal/promproc"

// The processes, binary lookup and queries of the stack live in promproc,
// which the end-to-end tests share; these names keep the stack's API.
type (
	// Process is a child process in its own process group.
	Process = promproc.Process
	// Sample is one element of a query result.
	Sample = promproc.Sample
)

var (
	// Locate finds a tool's binary: explicit path, $PATH, or `go tool`.
	Locate = promproc.Locate
	// ModuleRoot is the folder of the module's go.mod.
	ModuleRoot = promproc.ModuleRoot
	// StartProcess starts a binary with its output appended to a log.
	StartProcess = promproc.StartProcess
	// FreeAddr returns a free loopback address.
	FreeAddr = promproc.FreeAddr
	// Query runs an instant query against a Prometheus.
	Query = promproc.Query
)
