package exporter

// Every soak bound asserted in CI (TestSoakBounds, TestSoakBombsBounded,
// TestSoakScrapersBounded) isolates an attack's peak RSS one way: the
// attack runs alone in a child process of the test binary, which resets
// its high-water mark (VmHWM) just before the attack and reports it. A
// child process, because the figure is then the attack's alone: reset in
// this process, the peak would start from whatever earlier tests and
// attacks left here (live data, memory the runtime has not returned), and
// comparisons between attacks, such as ten scrapers against one, would
// carry that too. The reset, because what the attack is made from before
// it starts (a bomb's body, compressed and its plain form freed) is the
// attacker's memory, not the exporter's. The attacker's senders and
// scrapers share the child with the exporter, so the figure bounds the
// two together, from above.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/envelope-dev/envelope/internal/testenv"
)

// The environment that makes a run of the test binary a child running
// one attack of one test, and the prefix of the line it reports on.
const (
	soakChildTest   = "SOAK_CHILD_TEST"
	soakChildAttack = "SOAK_CHILD_ATTACK"
	soakResultLine  = "SOAK_RESULT "
)

// soakChild returns the attack this process runs as a child of test
// (started by runSoakChild), and whether it is such a child.
func soakChild(test string) (attack string, ok bool) {
	if os.Getenv(soakChildTest) != test {
		return "", false
	}
	return os.Getenv(soakChildAttack), true
}

// resetSoakPeak returns what the process no longer uses to the system and
// resets its peak RSS to its RSS now (Linux): the attack's peak counts
// from here.
func resetSoakPeak(tb testing.TB) {
	tb.Helper()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		testenv.Missing(tb, "resetting the peak RSS (/proc/self/clear_refs: "+err.Error()+")", "the figures are Linux's procfs counters")
	}
}

// reportSoakChild prints a child's result for runSoakChild.
func reportSoakChild(tb testing.TB, result any) {
	tb.Helper()
	out, err := json.Marshal(result)
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Println(soakResultLine + string(out))
}

// runSoakChild runs an attack of test in a child process and decodes what
// it reported into result. The test skips where the child skipped (no
// procfs, outside CI).
func runSoakChild(t *testing.T, test, attack string, result any) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), soakChildTest+"="+test, soakChildAttack+"="+attack)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("attack %s in a child process: %v\n%s", attack, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, soakResultLine); ok {
			if err := json.Unmarshal([]byte(v), result); err != nil {
				t.Fatalf("attack %s: %v in %q", attack, err, v)
			}
			return
		}
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("attack %s: the child process skipped:\n%s", attack, out)
	}
	t.Fatalf("attack %s in a child process reported nothing\n%s", attack, out)
}
