package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/core/evals"
	"github.com/sluice-gw/sluice/internal/policy"
	"github.com/sluice-gw/sluice/internal/server/evalrunner"
	"github.com/sluice-gw/sluice/internal/server/metrics"
	"github.com/sluice-gw/sluice/internal/server/runner"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

// evalReadLimit bounds how much of an eval answer is read.
const evalReadLimit = 1 << 20

// evaluator runs the models' fallback evals (package evals), calling the
// providers itself, and serves their state on /admin/evals.
type evaluator struct {
	// runner runs the evals; nil when no model declares any.
	runner    *evalrunner.Runner
	providers map[string]*provider // by name
}

// startEvals starts the fallback evals of a configuration whose models
// declare any (package evals); with none, nothing runs. A target the
// evals find degraded is marked so in rn.
func startEvals(cfg *config.Config, providers map[string]*provider, rn *runner.Runner, mm *metrics.Metrics, log *slog.Logger,
	now func() time.Time) (*evaluator, error) {
	e := &evaluator{providers: providers}
	sets, err := policy.EvalSets(cfg)
	if err != nil || len(sets) == 0 {
		return e, err
	}
	b := cfg.Evals.WithDefaults()
	m := mm.Evals
	e.runner = evalrunner.NewRunner(evals.Options{Sets: sets, MaxInFlight: b.MaxInFlight, CallsPerMinute: b.MaxCallsPerMinute, Seed: rand.Uint64()},
		now, e.call, evalrunner.Hooks{
			Result: func(s *evals.Set, target int, _ evals.Case, r evals.Result, rate float64, judged int) {
				t := s.Targets[target]
				result := "error"
				switch {
				case r.Pass():
					result = "pass"
				case r.Answered:
					result = "fail"
				}
				m.Runs.WithLabelValues(s.Model, t.Provider, t.Upstream, result).Inc()
				if r.Answered {
					m.Duration.WithLabelValues(s.Model, t.Provider, t.Upstream).Observe(r.Latency.Seconds())
				}
				if judged > 0 {
					m.PassRate.WithLabelValues(s.Model, t.Provider, t.Upstream).Set(rate)
				}
			},
			Transition: func(t evals.Transition) {
				rn.SetEvalDegraded(t.Model, t.Target, t.Degraded)
				state, v := "recovered", 0.0
				if t.Degraded {
					state, v = "degraded", 1
				}
				m.Degraded.WithLabelValues(t.Model, t.Provider, t.Upstream).Set(v)
				log.Warn("eval", "model", t.Model, "provider", t.Provider, "upstream_model", t.Upstream, "state", state,
					"pass_rate", fmt.Sprintf("%.2f", t.PassRate), "judged", t.Judged)
			},
		})
	for _, s := range sets {
		for _, t := range s.Targets {
			m.Degraded.WithLabelValues(s.Model, t.Provider, t.Upstream).Set(0)
		}
	}
	return e, nil
}

// close stops the evals.
func (e *evaluator) close() {
	if e.runner != nil {
		e.runner.Close()
	}
}

// evalBody is an eval call's request in the provider's dialect: the
// case's system prompt and user message, not streamed.
func evalBody(d protocol.Dialect, model string, c evals.Case, completionTokens bool) []byte {
	user := map[string]any{"role": "user", "content": c.Prompt}
	body := map[string]any{"model": model}
	switch {
	case d == protocol.Anthropic:
		body["max_tokens"] = c.MaxTokens
		body["messages"] = []any{user}
		if c.System != "" {
			body["system"] = c.System
		}
	default:
		limit := "max_tokens"
		if completionTokens {
			limit = "max_completion_tokens"
		}
		body[limit] = c.MaxTokens
		msgs := []any{}
		if c.System != "" {
			msgs = append(msgs, map[string]any{"role": "system", "content": c.System})
		}
		body["messages"] = append(msgs, user)
	}
	b, _ := json.Marshal(body)
	return b
}

// call sends one eval case to a target, with the provider's own
// credentials and headers and nothing of any client's, outside
// admission and every budget, and judges the answer. The reason it
// gives quotes the answer only after the secrets the call was made with
// are scrubbed from it.
func (e *evaluator) call(ctx context.Context, s *evals.Set, target int, c evals.Case) evals.Result {
	t := s.Targets[target]
	p := e.providers[t.Provider]
	if p == nil {
		return evals.Result{Reason: "unknown provider"}
	}
	start := time.Now()
	// The secrets the call is made with, its signer's included.
	var creds credentials
	ctx = creds.calling(ctx, p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.callURL(p.anyBase(), chatPath(p.dialect), t.Upstream),
		bytes.NewReader(evalBody(p.dialect, t.Upstream, c, p.probeCompletionTokens.Load())))
	if err != nil {
		return evals.Result{Reason: "cannot build the request"}
	}
	for k, vv := range p.headers {
		req.Header[k] = vv
	}
	p.authorize(req.Header)
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("X-Sluice-Eval", "1")
	resp, err := p.rt.RoundTrip(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(io.LimitReader(resp.Body, evalReadLimit))
		resp.Body.Close()
	}
	took := time.Since(start)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return evals.Result{Reason: fmt.Sprintf("no answer within %s", s.Timeout)}
	case ctx.Err() != nil:
		return evals.Result{Reason: "cancelled"}
	case err != nil && resp == nil:
		return evals.Result{Reason: "connection failed"}
	case err != nil:
		return evals.Result{Reason: fmt.Sprintf("status %d, answer cut short", resp.StatusCode)}
	case resp.StatusCode != http.StatusOK:
		return evals.Result{Reason: fmt.Sprintf("status %d", resp.StatusCode)}
	}
	text, ok := answerText(p.dialect, body)
	if !ok {
		return evals.Result{Reason: "the answer is not a chat completion"}
	}
	text = string(creds.scrubber().text([]byte(text)))
	return evals.Result{Answered: true, Reason: c.Check.Judge(text), Latency: took}
}

// answerText is the text of a whole chat answer: OpenAI's first choice's
// message content, or the text blocks of an Anthropic message.
func answerText(d protocol.Dialect, body []byte) (string, bool) {
	if d == protocol.Anthropic {
		var m struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(body, &m) != nil || m.Content == nil {
			return "", false
		}
		var b strings.Builder
		for _, c := range m.Content {
			if c.Type == "text" {
				b.WriteString(c.Text)
			}
		}
		return b.String(), true
	}
	var m struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.Choices) == 0 || m.Choices[0].Message.Content == nil {
		return "", false
	}
	return *m.Choices[0].Message.Content, true
}

// serve answers GET /admin/evals: per model with evals, per target,
// the pass rate over its window, whether it is degraded, its last run and
// its latest failures with their reasons.
func (e *evaluator) serve(w http.ResponseWriter, _ *http.Request) {
	out := struct {
		Models []evals.Status `json:"models"`
	}{Models: []evals.Status{}}
	if e.runner != nil {
		out.Models = e.runner.Status()
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(out)
}
