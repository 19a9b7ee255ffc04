package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTimelineBucketsByMinute(t *testing.T) {
	var tl Timeline
	for i := range 120 {
		tl.Arrive(time.Duration(i) * time.Second)
	}
	tl.Retry(61 * time.Second)
	tl.Throttle(62*time.Second, 2)
	tl.Queue(10*time.Second, 5, 7)
	tl.Queue(20*time.Second, 9, 1)
	tl.Queue(70*time.Second, 1, 40)
	tl.Refuse(65*time.Second, 2, 3*time.Millisecond)
	tl.TimeOut(66*time.Second, 1)
	tl.Answer(67*time.Second, 1, 400*time.Millisecond)
	tl.Answer(67*time.Second, 2, 9*time.Second) // background: not in the TTFT column

	if len(tl.Minutes) != 2 {
		t.Fatalf("%d minutes, want 2", len(tl.Minutes))
	}
	m0, m1 := tl.Minutes[0], tl.Minutes[1]
	if m0.Demand != 60 || m1.Demand != 61 || m1.Retries != 1 || m1.Throttled[2] != 1 {
		t.Errorf("demand %d/%d, retries %d, throttled %v", m0.Demand, m1.Demand, m1.Retries, m1.Throttled)
	}
	if m0.PeakQueue != 12 || m0.PeakGateway != 9 || m0.PeakUpstream != 7 {
		t.Errorf("minute 1 peaks: both %d, gateway %d, upstream %d; want 12, 9, 7", m0.PeakQueue, m0.PeakGateway, m0.PeakUpstream)
	}
	if both, gw, up := tl.Peak(2); both != 41 || gw != 9 || up != 40 {
		t.Errorf("Peak(2) = %d, %d, %d; want 41, 9, 40", both, gw, up)
	}
	if m1.Shed(2) != 2 || m1.Shed(1) != 1 {
		t.Errorf("shed bg %d, int %d; want 2 (refused + throttled), 1 (timed out)", m1.Shed(2), m1.Shed(1))
	}
	// One answer and one timed-out attempt: the median is the answer,
	// the p99 falls past the timeout.
	if got := m1.TTFTQuantile(.5); got != 400*time.Millisecond {
		t.Errorf("TTFT p50 = %s, want 400ms", got)
	}
	if got := m1.TTFTQuantile(.99); got != Unreached {
		t.Errorf("TTFT p99 = %s, want Unreached", got)
	}
	if got := m0.TTFTQuantile(.99); got != 0 {
		t.Errorf("a minute with no interactive answer: TTFT p99 = %s, want 0", got)
	}
}

func TestSeed002TablePrintsTheSeedsFigures(t *testing.T) {
	var tl Timeline
	for i := range 5 * 60 {
		tl.Arrive(time.Duration(i) * time.Second)
	}
	for range 30 {
		tl.Retry(4*time.Minute + time.Second)
	}
	var b bytes.Buffer
	WriteSeed002(&b, []*Row{{Name: "mine", Timeline: &tl}, {Name: "short"}}, 8*time.Second)
	out := b.String()
	for _, want := range []string{"347 and climbing", "+12 req/s (4.6%)", "mine", "+0.5 req/s (50.0%)", "short"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
