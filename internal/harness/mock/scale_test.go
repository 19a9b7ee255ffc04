package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestTimeScaleFlag runs the flag over each way of building a Config: the
// defaults with flags, a script, and a scenario's upstream.
func TestTimeScaleFlag(t *testing.T) {
	cfg, _, _, err := parseFlags([]string{"--ttft", "2s", "--tpot", "10ms", "--brownout", "30s-90s:x10", "--time-scale", "0.25"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TTFT != 500*time.Millisecond || cfg.TPOT != 2500*time.Microsecond || cfg.TimeScale != 0.25 {
		t.Errorf("flags: ttft %v tpot %v scale %v", cfg.TTFT, cfg.TPOT, cfg.TimeScale)
	}
	if b := cfg.Brownouts[0]; b.Start != 7500*time.Millisecond || b.End != 22500*time.Millisecond || b.Multiplier != 10 {
		t.Errorf("flags: brownout %+v, want 7.5s-22.5s x10", b)
	}

	cfg, _, _, err = parseFlags([]string{"--script", "testdata/brownout.yaml", "--time-scale", "0.5"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	script, err := LoadScript("testdata/brownout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := script.Scaled(0.5); !reflect.DeepEqual(cfg, want) {
		t.Errorf("--script --time-scale 0.5:\n got %+v\nwant %+v", cfg, want)
	}
	if cfg.MaxRunning != 16 || cfg.MaxWaiting != 64 {
		t.Errorf("capacity changed: max_running %d max_waiting %d, want 16 and 64", cfg.MaxRunning, cfg.MaxWaiting)
	}

	cfg, _, _, err = parseFlags([]string{"--scenario", "../../../scenarios/vllm-ramp.yaml", "--provider", "vllm", "--time-scale", "0.1"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	up, err := LoadScenarioUpstream("../../../scenarios/vllm-ramp.yaml", "vllm")
	if err != nil {
		t.Fatal(err)
	}
	if want := up.Scaled(0.1); !reflect.DeepEqual(cfg, want) {
		t.Errorf("--scenario --time-scale 0.1:\n got %+v\nwant %+v", cfg, want)
	}

	for _, bad := range []string{"0", "-2", "+Inf", "soon"} {
		if _, _, _, err := parseFlags([]string{"--time-scale", bad}, io.Discard); err == nil {
			t.Errorf("--time-scale %s accepted", bad)
		}
	}
}

// TestTimeScaleServes checks the scaled mock end to end: a call answers
// after the scaled TTFT, and /stats reports the factor. Timers never
// fire early, so the lower bound is exact; the upper bound is the
// unscaled TTFT, which only a mock that ignored the scale would reach.
func TestTimeScaleServes(t *testing.T) {
	const ttft, scale = 3 * time.Second, 0.1
	cfg := Config{Seed: 1, TTFT: ttft, OutputTokens: TokenRange{Min: 1}}.Scaled(scale)
	_, url := startMock(t, cfg)
	start := time.Now()
	resp := postJSON(t, context.Background(), url+"/v1/chat/completions", tinyChat)
	decode(t, resp, http.StatusOK)
	took := time.Since(start)
	if want := time.Duration(float64(ttft) * scale); took < want || took >= ttft {
		t.Errorf("answered in %v, want at least the scaled TTFT %v and well under the unscaled %v", took, want, ttft)
	}

	r, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var st StatsJSON
	if err := json.NewDecoder(r.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.TimeScale != scale || st.Completed != 1 {
		t.Errorf("/stats time_scale %v completed %d, want %v and 1", st.TimeScale, st.Completed, scale)
	}
	if got := New(instant()).TimeScale(); got != 1 {
		t.Errorf("an unscaled mock reports time scale %v, want 1", got)
	}
}

// TestTimeScaledRetryAfterIsPrecise: a scaled 2s is 500ms, which the
// whole-second header would round back up to 1s, so a scaled mock sends
// retry-after-ms on every status; an unscaled one only on 429.
func TestTimeScaledRetryAfterIsPrecise(t *testing.T) {
	fail := []Failure{{Kind: FailStatus, Status: 529, RetryAfter: 2 * time.Second}}
	for _, c := range []struct {
		scale  float64
		ms, ra string
	}{{1, "", "2"}, {0.25, "500", "1"}} {
		_, url := startMock(t, Config{Seed: 1, Failures: fail}.Scaled(c.scale))
		resp := postJSON(t, context.Background(), url+"/v1/messages", tinyMessages)
		decode(t, resp, 529)
		if got := resp.Header.Get("retry-after-ms"); got != c.ms {
			t.Errorf("scale %v: retry-after-ms %q, want %q", c.scale, got, c.ms)
		}
		if got := resp.Header.Get("retry-after"); got != c.ra {
			t.Errorf("scale %v: retry-after %q, want %q", c.scale, got, c.ra)
		}
	}
}

// TestRunReportsTimeScale: sluice mock --time-scale says so at start,
// and its /stats carries the factor for sluice load to check.
func TestRunReportsTimeScale(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	code := make(chan int, 1)
	go func() { code <- run(ctx, []string{"--listen", "127.0.0.1:0", "--time-scale", "0.5"}, &out, &errb) }()
	eventually(t, "the time scale line", func() bool { return strings.Contains(out.String(), "time scale 0.5") })
	url := regexp.MustCompile(`http://[0-9.:]+`).FindString(out.String())
	r, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(b), `"time_scale":0.5`) {
		t.Errorf("/stats %s lacks time_scale 0.5", b)
	}
	cancel()
	if c := <-code; c != 0 {
		t.Errorf("exit %d, stderr %s", c, errb.String())
	}
}
