package mock

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is written by run's goroutine and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMainBadInputReturns2(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--ttft", "soon"}, "ttft"},
		{[]string{"--output-tokens", "9-3"}, "output-tokens"},
		{[]string{"--script", "testdata/missing.yaml"}, "missing.yaml"},
		{[]string{"--brownout", "10s-5s:x2"}, "brownout"},
		{[]string{"--fail-status", "429"}, "--fail-rate"},
		{[]string{"--fail-rate", "0.5", "--fail-kind", "boom"}, "boom"},
		{[]string{"extra"}, "extra"},
	} {
		var out, errb bytes.Buffer
		if code := Main(c.args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: stderr %q does not mention %q", c.args, errb.String(), c.want)
		}
	}
}

func TestFlagsOverrideScript(t *testing.T) {
	cfg, _, _, err := parseFlags([]string{
		"--script", "testdata/brownout.yaml", "--ttft", "1ms", "--output-tokens", "3-4", "--early-head",
		"--latency-jitter", "5ms", "--brownout", "1s-2s:x3", "--fail-rate", "0.1", "--fail-status", "503", "--retry-after", "1s",
	}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TTFT != time.Millisecond || cfg.TPOT != 8*time.Millisecond || cfg.OutputTokens != (TokenRange{Min: 3, Max: 4}) || cfg.Seed != 42 || !cfg.EarlyHead {
		t.Errorf("merge wrong: %+v", cfg)
	}
	if cfg.Jitter != (Jitter{Kind: "uniform", Max: 5 * time.Millisecond}) || len(cfg.Brownouts) != 3 || len(cfg.Failures) != 7 {
		t.Errorf("appended settings wrong: %+v", cfg)
	}
	if f := cfg.Failures[6]; f != (Failure{Kind: FailStatus, Status: 503, RetryAfter: time.Second, Rate: 0.1}) {
		t.Errorf("flag failure %+v", f)
	}
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"--listen", "127.0.0.1:0", "--ttft", "0s", "--tpot", "0s", "--seed", "3"}, &out, &errb)
	}()
	addr := regexp.MustCompile(`http://[0-9.:]+`)
	eventually(t, "the listening line", func() bool { return addr.MatchString(out.String()) })
	url := addr.FindString(out.String())
	decode(t, postJSON(t, context.Background(), url+"/v1/messages", tinyMessages), http.StatusOK)
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d, stderr %s", c, errb.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if !strings.Contains(out.String(), "1 completed") {
		t.Errorf("stdout %q", out.String())
	}
}

func TestRunListenFailureReturns1(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--listen", "256.0.0.1:1"}, &out, &errb); code != 1 || errb.Len() == 0 {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
