package dashboard

import (
	"fmt"
	"slices"
	"strings"
)

// The pressure verdicts (Verdict.Kind).
const (
	Calm            = "calm"
	ProviderLimits  = "provider_limits"
	SlowGenerations = "slow_generations"
	RetryStorm      = "retry_storm"
	LocalSaturation = "local_saturation"
	// ProviderOut: no signal reaches its threshold, but a provider's
	// breaker is not closed (open, half-open or recovering): it carries
	// little or nothing, so the gateway is not calm, whatever the rates
	// say (its calls have stopped, so its slow rate has too).
	ProviderOut = "provider_out"
)

// Thresholds at which a signal, alone, names the pressure (its score
// reaches 1). They are shares and ages an operator would call trouble
// at any traffic level, so they need no tuning.
const (
	// throttledShare: a twentieth of upstream answers refused (429, or
	// 503/529 overloaded) means the provider is pacing us.
	throttledShare = 0.05
	// slowShare: a fifth of calls past the slow threshold is a brownout
	// (the breaker's own default trip point).
	slowShare = 0.2
	// secondShare: retries and hedges on a quarter of requests means
	// second calls are now load of their own.
	secondShare = 0.25
	// saturatedUse: in-flight at 90 % of the limit with requests
	// waiting or shed means the gateway's own capacity is the limit.
	saturatedUse = 0.9
	// waitBudgetMS: the oldest waiter past a quarter second is a queue
	// that users feel.
	waitBudgetMS = 250.0
	// shedShare: a twentieth of requests shed.
	shedShareLimit = 0.05
)

// Signals are what Classify judges, averaged over the last few seconds
// (SignalsFrom) so one odd second does not flip the verdict.
type Signals struct {
	// RPS is client requests finished per second; Upstream the
	// providers' answers per second.
	RPS, Upstream float64
	// Shed is requests shed per second.
	Shed float64
	// Queued is the queue's depth; OldestWaitMS its oldest waiter's age.
	Queued       float64
	OldestWaitMS float64
	// Use is the fullest concurrency scope's in-flight over its limit (0
	// where unlimited).
	Use float64
	// SlowRate and ErrorRate are the worst provider's breaker-window
	// rates, named by SlowProvider and ErrorProvider.
	SlowRate, ErrorRate         float64
	SlowProvider, ErrorProvider string
	// Throttled is upstream answers per second that were 429 or
	// 503/529, the most from ThrottledProvider.
	Throttled         float64
	ThrottledProvider string
	// Retries and Hedges are second calls per second after a failure and
	// after a delay; Rescues those moved off a tripped provider (a
	// consequence of slowness, not a storm); Refused the second calls
	// the budgets turned down.
	Retries, Hedges, Rescues, Refused float64
	// Open names the providers whose breaker is not closed, each with
	// its state ("primary half_open").
	Open []string
}

// Verdict is Classify's answer: the kind of pressure, a one-line summary
// and the evidence, strongest first.
type Verdict struct {
	Kind    string   `json:"kind"`
	Summary string   `json:"summary"`
	Why     []string `json:"why"`
	// Scores are each kind's strength; 1 is its threshold.
	Scores map[string]float64 `json:"scores"`
}

// Classify names the pressure on the gateway from its signals: the kind
// whose signal is furthest past its threshold, or Calm when none reaches
// it. It is pure: the same signals give the same verdict.
func Classify(s Signals) Verdict {
	type cand struct {
		kind, summary string
		score         float64
		why           string
	}
	var cs []cand

	// Provider limits: the provider refuses calls.
	if s.Upstream > 0 {
		share := s.Throttled / s.Upstream
		cs = append(cs, cand{ProviderLimits, "the providers are refusing calls (rate limits or overload)", share / throttledShare,
			fmt.Sprintf("%.0f%% of upstream answers are 429 or overloaded (most from %s); threshold %.0f%%", 100*share, orNone(s.ThrottledProvider), 100*throttledShare)})
	}
	// Slow generations: calls outlast the slow threshold.
	slowWhy := fmt.Sprintf("%.0f%% of %s's calls are slow in its breaker window; threshold %.0f%%", 100*s.SlowRate, orNone(s.SlowProvider), 100*slowShare)
	if s.Rescues > 0 {
		slowWhy += fmt.Sprintf("; %.1f/s stranded calls rescued elsewhere", s.Rescues)
	}
	cs = append(cs, cand{SlowGenerations, "a provider is slow (a brownout or long generations)", s.SlowRate / slowShare, slowWhy})
	// Retry storm: second calls are a load of their own.
	if s.RPS > 0 {
		share := (s.Retries + s.Hedges) / s.RPS
		score := share / secondShare
		why := fmt.Sprintf("retries and hedges are %.0f%% of requests (%.1f/s retries, %.1f/s hedges); threshold %.0f%%", 100*share, s.Retries, s.Hedges, 100*secondShare)
		if s.Refused > 0 {
			why += fmt.Sprintf("; the budgets turned down %.1f/s more", s.Refused)
			score += s.Refused / s.RPS / secondShare
		}
		cs = append(cs, cand{RetryStorm, "second calls (retries, hedges) are multiplying the load", score, why})
	}
	// Local saturation: the gateway's own limit is full while the
	// providers are well. It only counts while no provider signal is
	// half-way to its own threshold: a full limit in front of a slow
	// provider is the provider's doing.
	providerTrouble := s.SlowRate >= slowShare/2 || (s.Upstream > 0 && s.Throttled/s.Upstream >= throttledShare/2) || len(s.Open) > 0
	if !providerTrouble && (s.Use >= saturatedUse || s.Shed > 0) {
		score := s.OldestWaitMS / waitBudgetMS
		if s.RPS > 0 {
			score = max(score, s.Shed/s.RPS/shedShareLimit)
		}
		cs = append(cs, cand{LocalSaturation, "the gateway's own concurrency limit is the bottleneck; the providers are healthy",
			score, fmt.Sprintf("in-flight at %.0f%% of the limit, %.0f queued, oldest waiting %.0f ms, %.1f/s shed; providers healthy", 100*s.Use, s.Queued, s.OldestWaitMS, s.Shed)})
	}

	slices.SortStableFunc(cs, func(a, b cand) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	v := Verdict{Kind: Calm, Summary: "no pressure: every signal is below its threshold", Scores: map[string]float64{}}
	for _, c := range cs {
		v.Scores[c.kind] = round2(c.score)
	}
	if len(cs) > 0 && cs[0].score >= 1 {
		v.Kind, v.Summary = cs[0].kind, cs[0].summary
	}
	for _, c := range cs {
		if c.score >= 0.5 || c.kind == v.Kind {
			v.Why = append(v.Why, c.why)
		}
	}
	if len(s.Open) > 0 {
		// The headline names every provider not closed, whatever the
		// verdict.
		out := strings.Join(s.Open, ", ")
		if v.Kind == Calm {
			v.Kind, v.Summary = ProviderOut, "not closed: "+out+"; its traffic goes to the next target, or is shed"
		} else {
			v.Summary += "; not closed: " + out
		}
		v.Why = append(v.Why, "breakers not closed: "+out)
	}
	if v.Kind == Calm && len(v.Why) == 0 {
		v.Why = append(v.Why, fmt.Sprintf("%.0f req/s, %.0f queued, slow-call rate %.0f%%", s.RPS, s.Queued, 100*s.SlowRate))
	}
	return v
}

func orNone(s string) string {
	if s == "" {
		return "no provider"
	}
	return s
}

func round2(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

// SignalsFrom averages the signals of the last n samples (all when
// fewer): rates and queue figures are means, the breaker rates their
// worst, and Open is the providers not closed in any of them.
func SignalsFrom(samples []Sample, n int) Signals {
	if len(samples) > n {
		samples = samples[len(samples)-n:]
	}
	var s Signals
	if len(samples) == 0 {
		return s
	}
	k := float64(len(samples))
	throttledBy := map[string]float64{}
	for _, x := range samples {
		s.RPS += x.RPS / k
		s.Retries += x.Retries / k
		s.Hedges += x.Hedges / k
		s.Rescues += x.Rescues / k
		s.Refused += x.Refused / k
		s.OldestWaitMS += x.OldestWaitMS / k
		q := 0
		for _, d := range x.Queue {
			q += d
		}
		s.Queued += float64(q) / k
		for _, r := range x.Sheds {
			s.Shed += r / k
		}
		use := 0.0
		if x.Limit > 0 {
			use = float64(x.InFlight) / float64(x.Limit)
		}
		for _, p := range x.Providers {
			s.Upstream += p.Calls / k
			s.Throttled += p.Throttled / k
			throttledBy[p.Name] += p.Throttled
			if p.Limit > 0 {
				use = max(use, float64(p.InFlight)/float64(p.Limit))
			}
			if p.SlowRate > s.SlowRate {
				s.SlowRate, s.SlowProvider = p.SlowRate, p.Name
			}
			if p.ErrorRate > s.ErrorRate {
				s.ErrorRate, s.ErrorProvider = p.ErrorRate, p.Name
			}
		}
		s.Use += use / k
	}
	best := 0.0
	for name, t := range throttledBy {
		if t > best || (t == best && name < s.ThrottledProvider) {
			best, s.ThrottledProvider = t, name
		}
	}
	// A provider not closed in any of the samples counts, in the last
	// such state: a breaker that opens for half a second, or flaps, is
	// named for the whole averaging span, not only when a sample lands
	// on it, and the verdict does not flip with it.
	out, order := map[string]string{}, []string(nil)
	for _, x := range samples {
		for _, p := range x.Providers {
			if p.State == "" || p.State == "closed" {
				continue
			}
			if _, seen := out[p.Name]; !seen {
				order = append(order, p.Name)
			}
			out[p.Name] = p.State
		}
	}
	for _, name := range order {
		s.Open = append(s.Open, name+" "+out[name])
	}
	return s
}
