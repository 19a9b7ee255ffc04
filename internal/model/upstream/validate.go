package upstream

import (
	"errors"
	"fmt"
	"time"
)

// Validate reports the first setting that makes no sense, naming it.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.TTFT < 0 || c.TPOT < 0 || c.PrefillPer1K < 0 {
		bad("ttft, tpot and prefill_per_1k_tokens must not be negative")
	}
	switch c.Jitter.Kind {
	case "", "fixed":
	case "uniform":
		if c.Jitter.Max < 0 {
			bad("jitter.max must not be negative")
		}
	case "lognormal":
		j := c.Jitter
		if j.P50 <= 0 {
			bad("jitter.p50 must be positive for lognormal jitter")
		} else if j.P99 == 0 && j.Sigma <= 0 {
			bad("lognormal jitter needs jitter.p99 or jitter.sigma")
		} else if j.P99 != 0 && j.P99 <= j.P50 {
			bad("jitter.p99 must exceed jitter.p50")
		}
	default:
		bad("jitter.kind %q: want fixed, uniform or lognormal", c.Jitter.Kind)
	}
	if q := c.Quality; q != nil && !(*q >= 0 && *q <= 1) {
		bad("quality %v: want a share from 0 to 1", *q)
	}
	for i, a := range c.Answers {
		if a.Match == "" {
			bad("answers[%d].match: missing; write a text the prompt contains", i)
		}
	}
	if r := c.OutputTokens; r.Min < 0 || (r.Max != 0 && r.Max < r.Min) {
		bad("output_tokens %d..%d: want 0 <= min <= max", r.Min, r.Max)
	}
	for i, b := range c.Brownouts {
		if err := checkWindow(b.Start, b.End); err != nil {
			bad("brownouts[%d]: %v", i, err)
		}
		if b.Fraction < 0 || b.Fraction > 1 {
			bad("brownouts[%d].fraction %v: want 0..1", i, b.Fraction)
		}
		if (b.Multiplier > 0) == (b.Latency > 0) || b.Multiplier < 0 || b.Latency < 0 {
			bad("brownouts[%d]: set exactly one of multiplier or latency, positive", i)
		}
		if b.LatencyTo < 0 || (b.LatencyTo > 0 && (b.Latency == 0 || b.End == 0)) {
			bad("brownouts[%d].latency_to: a ramp needs latency (where it starts) and end, and a positive latency_to", i)
		}
	}
	for i, f := range c.Failures {
		if err := f.Validate(); err != nil {
			bad("failures[%d]: %v", i, err)
		}
	}
	if c.ContextWindow < 0 {
		bad("context_window %d: want a token count, or 0 for no limit", c.ContextWindow)
	}
	switch c.AssistantPrefill {
	case "", PrefillAllow, PrefillRefuse:
	default:
		bad("prefill %q: want allow or refuse", c.AssistantPrefill)
	}
	switch c.Words {
	case "", WordsSeed, WordsPrompt:
	default:
		bad("words %q: want seed or prompt", c.Words)
	}
	if c.MaxRunning < 0 || c.MaxWaiting < -1 {
		bad("max_running must be >= 0 and max_waiting >= -1")
	}
	if c.BatchSlowdown < 0 {
		bad("batch_slowdown must not be negative")
	}
	if c.EmbeddingDim < 0 || c.EmbeddingDim > 65536 {
		bad("embedding_dim %d: want 0..65536", c.EmbeddingDim)
	}
	return errors.Join(errs...)
}

// Validate reports what makes one failure rule unusable.
func (f Failure) Validate() error {
	switch f.Kind {
	case FailStatus:
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return fmt.Errorf("status %d: want 400..599", f.Status)
		}
	case FailReset, FailHang, FailMalformed, FailTruncate, FailStall, FailEOF:
	case FailNoDone, FailContextLength, FailContentFilter:
		if f.Status != 0 || f.AfterTokens != 0 {
			return fmt.Errorf("kind %s takes no status or after_tokens", f.Kind)
		}
	default:
		return fmt.Errorf("kind %q: want status, reset, hang, malformed, truncate, stall, eof, no_done, context_length or content_filter", f.Kind)
	}
	if f.Rate < 0 || f.Rate > 1 {
		return fmt.Errorf("rate %v: want 0..1", f.Rate)
	}
	if f.RetryAfter < 0 || f.Delay < 0 || f.AfterTokens < 0 || f.For < 0 {
		return errors.New("retry_after, delay, after_tokens and for must not be negative")
	}
	if f.For != 0 && f.Kind != FailHang && f.Kind != FailStall {
		return fmt.Errorf("for: only a hang or a stall is silent for a while, not %s", f.Kind)
	}
	switch f.Then {
	case "":
	case ThenResume, ThenEOF, ThenTruncate, ThenReset:
		if f.Kind != FailStall && f.Kind != FailMalformed {
			return fmt.Errorf("then: only a stall or a malformed event is followed by something, not %s", f.Kind)
		}
		if f.Kind == FailStall && f.For == 0 {
			return fmt.Errorf("then %s: a stall without for never ends; give it a for", f.Then)
		}
	default:
		return fmt.Errorf("then %q: want resume, eof, truncate or reset", f.Then)
	}
	return checkWindow(f.Start, f.End)
}

func checkWindow(start, end time.Duration) error {
	if start < 0 || end < 0 {
		return errors.New("start and end must not be negative")
	}
	if end != 0 && end <= start {
		return fmt.Errorf("end %v must be after start %v", end, start)
	}
	return nil
}

// inWindow reports whether offset t falls in [start, end), end 0 = open.
func inWindow(t, start, end time.Duration) bool {
	return t >= start && (end == 0 || t < end)
}
