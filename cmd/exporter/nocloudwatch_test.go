//go:build nocloudwatch

package main

import (
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/cmdline"
	"github.com/envelope-dev/envelope/internal/cmdline/cmdlinetest"
)

// A build without the CloudWatch collector refuses its flags with why,
// rather than kingpin's "unknown long flag".
func TestNoCloudWatchFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--cloudwatch.cluster=perf"},
		{"serve", "--web.listen-address=:0", "--cloudwatch.region", "us-east-1"},
	} {
		code, _, se := cmdlinetest.Capture(runCLI, args...)
		if code != cmdline.CodeError || !strings.Contains(se, "this binary has no CloudWatch collector (built with -tags nocloudwatch") {
			t.Errorf("%v: exit %d, stderr %q", args, code, se)
		}
	}
	// After "--" an argument is not a flag.
	code, _, se := cmdlinetest.Capture(runCLI, "serve", "--", "--cloudwatch.cluster")
	if strings.Contains(se, "CloudWatch") || code != cmdline.CodeError {
		t.Errorf("serve -- --cloudwatch.cluster: exit %d, stderr %q", code, se)
	}
}
