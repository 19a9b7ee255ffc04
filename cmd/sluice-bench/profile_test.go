package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
)

// BenchmarkSluiceInProcess runs the throughput phase's request (closed
// loop, 64 clients, instant one-token upstream) through an in-process
// gateway built from the same configuration the harness gives the sluice
// binary, request log to a file included. The binary has no pprof
// endpoint, so this is how to see where Sluice's CPU goes:
//
//	go test -run '^$' -bench SluiceInProcess -benchtime 5s -cpuprofile /tmp/sluice.prof -o /tmp/bench.test ./cmd/sluice-bench
//	go tool pprof -top -focus 'sluice/(gateway|admission|lifecycle|protocol|metrics)' /tmp/bench.test /tmp/sluice.prof
//
// The profile also holds the mock and the load generator, which run in the
// same process; -focus narrows it to the gateway's share.
func BenchmarkSluiceInProcess(b *testing.B) {
	upstream, stop, err := mock.New(mock.Config{OutputTokens: mock.TokenRange{Min: 1}}).Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	cfg, err := config.Parse([]byte(sluiceConfig("127.0.0.1:0", "127.0.0.1:0", upstream, limits{})), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(b.TempDir(), "requests.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	g, err := gateway.New(cfg, gateway.Options{Logger: gateway.NewLogger(logFile, cfg.Log)})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()

	c := newClient(&target{url: srv.URL, header: http.Header{}}, chatBody(false, 0), 64)
	defer c.close()
	// RunParallel starts parallelism x GOMAXPROCS goroutines: 64 clients.
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r := c.do(ctx)
			cancel()
			if r.err != nil || r.status != http.StatusOK {
				b.Errorf("status %d, err %v", r.status, r.err)
				return
			}
		}
	})
}
