package exporter

// Gzip bombs of each kind over OTLP/HTTP and OTLP/gRPC, 50 at once, with
// bodies of about 2 MB on the wire:
//   - zeros: gzip of zeros far past the body limit once decoded;
//   - forged: the same, its trailer claiming a decoded size of 1 KiB;
//   - valid: a valid export request of just under 16 MiB (the body
//     limit) once decoded, made of hard-to-compress attribute values.
//
//	go test -c -o exporter.test ./internal/exporter/
//	for a in http-zeros http-forged http-valid grpc-zeros grpc-forged grpc-valid; do
//	  ./exporter.test -test.run '^$' -test.bench "SoakBombs/^$a\$" -test.benchtime 1x
//	done
//
// TestSoakBombsBounded runs each with 20 senders in a child process (see
// soak_child_test.go) and asserts the peak RSS and the answers: the body
// limit refuses every zeros and forged bomb with what an OTLP exporter
// takes as final, 413 over HTTP and RESOURCE_EXHAUSTED (without retry
// information) over gRPC, counted as too_large, and accepts every valid
// one; a bomb may instead wait too long for a decoding slot, refused as
// busy (503, UNAVAILABLE: retried). Both set the soft memory limit serve
// sets by default.

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/envelope-dev/envelope/internal/otlp"
)

// bombBody returns a gzip body of the kind, about 2 MB on the wire.
func bombBody(kind string) []byte {
	var zipped bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&zipped, gzip.BestSpeed) // a valid level
	switch kind {
	case "zeros", "forged":
		zeros := make([]byte, 1<<20)
		for zipped.Len() < 2<<20 {
			_, _ = gz.Write(zeros) // in memory, cannot fail
		}
	case "valid":
		// Hex of random bytes compresses about 2:1; the rest is 'a's.
		rnd := make([]byte, 2<<20)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range rnd {
			rnd[i] = byte(r.Uint32())
		}
		val := hex.EncodeToString(rnd) + strings.Repeat("a", 16<<20-4<<20-1024)
		msg, _ := proto.Marshal(exportReq([]*commonpb.KeyValue{strAttr("host", val)},
			sumMetric("k6_http_reqs", cumul, dbl(1, 1))))
		_, _ = gz.Write(msg) // in memory, cannot fail
	}
	_ = gz.Close() // in memory, cannot fail
	b := zipped.Bytes()
	if kind == "forged" {
		binary.LittleEndian.PutUint32(b[len(b)-4:], 1024)
	}
	return b
}

// sendBombs sends n copies of the kind's body at once over HTTP or gRPC
// and returns how many were answered with each status.
func sendBombs(st *soakTarget, grpcAddr string, body []byte, n int) (map[string]int, error) {
	var client *http.Client
	url := st.base + "/v1/metrics"
	if grpcAddr != "" {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		client = &http.Client{Transport: &http.Transport{Protocols: p}}
		url = "http://" + grpcAddr + "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export"
		frame := append([]byte{1, 0, 0, 0, 0}, body...)
		binary.BigEndian.PutUint32(frame[1:5], uint32(len(body)))
		body = frame
	} else {
		client = http.DefaultClient
	}
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
			if grpcAddr != "" {
				req.Header.Set("Content-Type", "application/grpc")
				req.Header.Set("Grpc-Encoding", "gzip")
			} else {
				req.Header.Set("Content-Type", "application/x-protobuf")
				req.Header.Set("Content-Encoding", "gzip")
			}
			status := "error"
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				status = fmt.Sprint(resp.StatusCode)
				if grpcAddr != "" {
					status = "grpc-" + resp.Header.Get("Grpc-Status") + resp.Trailer.Get("Grpc-Status")
					// Retry information would make an OTLP exporter retry a
					// RESOURCE_EXHAUSTED.
					if resp.Header.Get("Grpc-Status-Details-Bin")+resp.Trailer.Get("Grpc-Status-Details-Bin") != "" {
						status += "-details"
					}
				}
			}
			mu.Lock()
			got[status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return got, nil
}

func BenchmarkSoakBombs(b *testing.B) {
	for _, tr := range []string{"http", "grpc"} {
		for _, kind := range []string{"zeros", "forged", "valid"} {
			b.Run(tr+"-"+kind, func(b *testing.B) {
				body := bombBody(kind)
				debug.FreeOSMemory() // the peak is the exporter's, not the body's making
				for b.Loop() {
					st, stop := startSoak(b)
					addr := ""
					if tr == "grpc" {
						var cancel func()
						addr, cancel = st.serveGRPC(b)
						defer cancel()
					}
					got, err := sendBombs(st, addr, body, 50)
					if err != nil {
						b.Fatal(err)
					}
					b.Logf("answers: %v", got)
					st.report(b)
					if peak := procKiB(b, "VmHWM") / 1024; peak > 256 {
						b.Errorf("peak RSS %.0f MiB, over 256 MiB", peak)
					}
					stop()
				}
			})
		}
	}
}

// TestSoakBombsBounded sends 20 bombs of each kind at once over each
// transport, each attack in a child process, and asserts the peak RSS
// and that every bomb got an answer.
func TestSoakBombsBounded(t *testing.T) {
	if a, ok := soakChild("TestSoakBombsBounded"); ok {
		tr, kind, _ := strings.Cut(a, "-")
		body := bombBody(kind)
		resetSoakPeak(t) // the body's making is the attacker's
		st, stop := startSoak(t)
		defer stop()
		addr := ""
		if tr == "grpc" {
			var cancel func()
			addr, cancel = st.serveGRPC(t)
			defer cancel()
		}
		got, err := sendBombs(st, addr, body, 20)
		if err != nil {
			t.Fatal(err)
		}
		reportSoakChild(t, bombResult{Peak: procKiB(t, "VmHWM") / 1024, Answers: got, Requests: counts(st.s.otlpReqs)})
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for _, tr := range []string{"http", "grpc"} {
		for _, kind := range []string{"zeros", "forged", "valid"} {
			var r bombResult
			runSoakChild(t, "TestSoakBombsBounded", tr+"-"+kind, &r)
			t.Logf("%s-%s: peak %.0f MiB, answers %v, OTLP requests %v", tr, kind, r.Peak, r.Answers, r.Requests)
			if r.Peak == 0 || r.Peak > 256 {
				t.Errorf("%s-%s: peak %.0f MiB, bound 256", tr, kind, r.Peak)
			}
			if msg := checkBombAnswers(tr, kind, 20, r); msg != "" {
				t.Errorf("%s-%s: %s", tr, kind, msg)
			}
		}
	}
}

// bombResult is what a bomb attack measured: the peak RSS, the count
// of each answer and the exporter's count of OTLP requests by outcome.
type bombResult struct {
	Peak     float64            `json:"peak_rss_mib"`
	Answers  map[string]int     `json:"answers"`
	Requests map[string]float64 `json:"requests"`
}

// checkBombAnswers says what is wrong with n bombs' answers (empty:
// nothing). A zeros or forged bomb is past the body limit once decoded:
// it must be refused by that limit, 413 over HTTP or RESOURCE_EXHAUSTED
// (gRPC status 8) over gRPC, and counted as too_large; a valid bomb is
// within it and must be accepted (200, gRPC OK) and counted as ok. Any
// bomb may instead be refused as busy (503, UNAVAILABLE: 14), counted so,
// while others hold the decoding slots; at least one must meet the limit
// or be accepted.
func checkBombAnswers(tr, kind string, n int, r bombResult) string {
	answer := map[string]string{"http": "413", "grpc": "grpc-8"}[tr]
	outcome := otlp.OutcomeTooLarge
	if kind == "valid" {
		answer = map[string]string{"http": "200", "grpc": "grpc-0"}[tr]
		outcome = otlp.OutcomeOK
	}
	busy := map[string]string{"http": "503", "grpc": "grpc-14"}[tr]
	want := map[string]float64{}
	if k := r.Answers[answer]; k > 0 {
		want[outcome] = float64(k)
	}
	if k := r.Answers[busy]; k > 0 {
		want[otlp.OutcomeBusy] = float64(k)
	}
	if r.Answers[answer] == 0 || r.Answers[answer]+r.Answers[busy] != n || !maps.Equal(r.Requests, want) {
		return fmt.Sprintf("answers %v, OTLP requests %v; want %s (counted as %s) or %s (busy) only, at least one %s", r.Answers, r.Requests, answer, outcome, busy, answer)
	}
	return ""
}
