package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/harness/mock"
	"github.com/sluice-gw/sluice/internal/server/gateway"
	"github.com/sluice-gw/sluice/internal/server/redistest"
)

const streamBody = `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// idemKey is the headers of a request with Idempotency-Key k, and extra.
func idemKey(k string, extra ...string) map[string]string {
	h := map[string]string{"Idempotency-Key": k}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

// answer is one response as a client read it.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// send posts in the background and delivers the whole answer.
func (s *stack) send(path, body string, hdr map[string]string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		resp, err := s.post(context.Background(), path, body, hdr)
		if err != nil {
			ch <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		ch <- answer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
	}()
	return ch
}

// gate holds every upstream call at its start until opened, so a test
// can line requests up behind one generation without racing it.
type gate struct {
	next    http.RoundTripper
	started atomic.Int64
	open    chan struct{}
}

func newGate() *gate { return &gate{next: gateway.NewTransport(), open: make(chan struct{})} }

func (g *gate) RoundTrip(r *http.Request) (*http.Response, error) {
	g.started.Add(1)
	select {
	case <-g.open:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	return g.next.RoundTrip(r)
}

func withTransport(rt http.RoundTripper) func(*gateway.Options) {
	return func(o *gateway.Options) { o.Transport = rt }
}

// gauge reads one sample of the gateway's metrics (0 when absent).
func gauge(t *testing.T, s *stack, sample string) float64 {
	t.Helper()
	for _, l := range strings.Split(httpGetAdmin(t, s, "/metrics"), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

func idemResults(t *testing.T, s *stack, result string) float64 {
	return gauge(t, s, `sluice_idempotency_total{result="`+result+`"}`)
}

// N requests with one key while its first is in flight make one
// generation, and every caller gets the same answer: status, headers
// and bytes. They share it without admission slots: the gateway has one
// slot and no queue, which the leader holds.
func TestIdempotentDuplicatesJoin(t *testing.T) {
	for _, c := range []struct {
		name, body string
	}{
		{"whole", chatBody},
		{"streamed", streamBody},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 5
			g := newGate()
			s := newStack(t, mock.Config{TPOT: time.Millisecond}, func(c *config.Config) {
				c.Admission.MaxInFlight = 1
				c.Admission.Queue.MaxDepth = 0
				c.Admission.Priorities = config.Priorities{}
			}, withTransport(g))
			hdr := idemKey("join-"+c.name, "X-Mock-Output-Tokens", "20")
			var answers []<-chan answer
			answers = append(answers, s.send("/v1/chat/completions", c.body, hdr))
			waitFor(t, "the leader's upstream call", func() bool { return g.started.Load() == 1 })
			for range n - 1 {
				answers = append(answers, s.send("/v1/chat/completions", c.body, hdr))
			}
			waitFor(t, "every duplicate to join", func() bool {
				return gauge(t, s, "sluice_idempotency_participants") == n
			})
			close(g.open)
			var got []answer
			for _, ch := range answers {
				a := <-ch
				if a.err != nil || a.status != 200 {
					t.Fatalf("status %d, %v: %s", a.status, a.err, a.body)
				}
				got = append(got, a)
			}
			if st := s.mock.Stats(); st.Total != 1 || g.started.Load() != 1 {
				t.Errorf("%d upstream calls (%d through the gateway's transport); want one generation", st.Total, g.started.Load())
			}
			if c.body == streamBody && !bytes.HasSuffix(got[0].body, []byte("data: [DONE]\n\n")) {
				t.Errorf("the stream is not whole:\n%s", got[0].body)
			}
			for i, a := range got[1:] {
				if !bytes.Equal(a.body, got[0].body) {
					t.Errorf("caller %d's body differs from the leader's:\n%s\n%s", i+1, a.body, got[0].body)
				}
				for _, h := range []string{"Content-Type", "Content-Length", "X-Request-Id"} {
					if a.header.Get(h) != got[0].header.Get(h) {
						t.Errorf("caller %d's %s is %q; the leader's %q", i+1, h, a.header.Get(h), got[0].header.Get(h))
					}
				}
				if a.header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("caller %d's answer lacks Idempotent-Replayed: true", i+1)
				}
			}
			if got[0].header.Get("Idempotent-Replayed") != "" {
				t.Error("the leader's answer is marked replayed")
			}
			waitFor(t, "every request counted", func() bool { return idemResults(t, s, "joined") == n-1 })
			if l := idemResults(t, s, "leader"); l != 1 {
				t.Errorf("sluice_idempotency_total{result=leader} %v; want 1", l)
			}
			// Each caller leaves its flight as its handler ends, just
			// after its client has the last byte.
			waitFor(t, "every caller to leave its flight", func() bool { return gauge(t, s, "sluice_idempotency_participants") == 0 })
		})
	}
}

// A later request with the key gets the stored answer, marked, with no
// generation; once the TTL has passed, it generates again.
func TestIdempotentReplay(t *testing.T) {
	var skew atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Idempotency.TTL = config.Duration(time.Hour)
	}, func(o *gateway.Options) { o.Now = clock })
	for _, c := range []struct{ name, body string }{{"whole", chatBody}, {"streamed", streamBody}} {
		t.Run(c.name, func(t *testing.T) {
			s.mock.ResetStats()
			hdr := idemKey("replay-" + c.name)
			status, h1, first := s.do("/v1/chat/completions", c.body, hdr)
			if status != 200 || h1.Get("Idempotent-Replayed") != "" {
				t.Fatalf("first: %d, replayed %q: %s", status, h1.Get("Idempotent-Replayed"), first)
			}
			status, h2, again := s.do("/v1/chat/completions", c.body, hdr)
			if status != 200 || h2.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again, first) {
				t.Fatalf("replay: %d, replayed %q:\n%s\nwant the first answer:\n%s", status, h2.Get("Idempotent-Replayed"), again, first)
			}
			if h2.Get("X-Request-Id") != h1.Get("X-Request-Id") || h2.Get("Content-Type") != h1.Get("Content-Type") {
				t.Errorf("the replay's headers differ: %v vs %v", h2, h1)
			}
			if st := s.mock.Stats(); st.Total != 1 {
				t.Errorf("%d generations; want the replay to make none", st.Total)
			}
			skew.Add(int64(time.Hour + time.Second))
			status, h3, later := s.do("/v1/chat/completions", c.body, hdr)
			if status != 200 || h3.Get("Idempotent-Replayed") != "" || bytes.Equal(later, first) {
				t.Errorf("after the TTL: %d, replayed %q; want a new answer", status, h3.Get("Idempotent-Replayed"))
			}
			if st := s.mock.Stats(); st.Total != 2 {
				t.Errorf("%d generations; want a second once the TTL passed", st.Total)
			}
		})
	}
	// Every answer but the last one stored has expired by now.
	if n := gauge(t, s, "sluice_idempotency_stored_entries"); n != 1 {
		t.Errorf("sluice_idempotency_stored_entries %v; want the one fresh answer", n)
	}
	if b := gauge(t, s, "sluice_idempotency_stored_bytes"); b <= 0 {
		t.Errorf("sluice_idempotency_stored_bytes %v", b)
	}
}

// The same key with another body is refused with 422, in the client's
// dialect, whether the first is in flight or stored.
func TestIdempotencyKeyReusedWithAnotherBody(t *testing.T) {
	g := newGate()
	s := newStack(t, mock.Config{}, nil, withTransport(g))
	first := s.send("/v1/chat/completions", chatBody, idemKey("reused"))
	waitFor(t, "the first call", func() bool { return g.started.Load() == 1 })
	other := strings.Replace(chatBody, `"hi"`, `"hello"`, 1)
	check := func(when string, path, body string, hdr map[string]string, wantType string) {
		t.Helper()
		status, _, b := s.do(path, body, hdr)
		if status != 422 || errorType(t, b) != wantType || !strings.Contains(string(b), "already used with a different request body") {
			t.Errorf("%s: %d %s; want 422 %s saying the key was used with another body", when, status, b, wantType)
		}
	}
	check("in flight", "/v1/chat/completions", other, idemKey("reused"), "invalid_request_error")
	close(g.open)
	if a := <-first; a.status != 200 {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	check("stored", "/v1/chat/completions", other, idemKey("reused"), "invalid_request_error")
	// Anthropic's shape, for its endpoint.
	msgs := `{"model":"mock-claude","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	hdr := idemKey("reused-anthropic", "anthropic-version", "2023-06-01")
	if status, _, b := s.do("/v1/messages", msgs, hdr); status != 200 {
		t.Fatalf("anthropic: %d %s", status, b)
	}
	check("anthropic", "/v1/messages", strings.Replace(msgs, "16", "17", 1), hdr, "invalid_request_error")
	if st := s.mock.Stats(); st.Total != 2 {
		t.Errorf("%d generations; a conflict must make none", st.Total)
	}
	if c := idemResults(t, s, "conflict"); c != 3 {
		t.Errorf("sluice_idempotency_total{result=conflict} %v; want 3", c)
	}
}

func TestIdempotencyKeyValidation(t *testing.T) {
	s := newStack(t, mock.Config{}, nil)
	for _, c := range []struct{ name, key, want string }{
		{"too long", strings.Repeat("k", 256), "at most 255"},
		{"empty", "", "empty"},
		{"not ASCII", "clé", "not printable ASCII"},
	} {
		status, _, b := s.do("/v1/chat/completions", chatBody, idemKey(c.key))
		if status != 400 || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), "Idempotency-Key") {
			t.Errorf("%s: %d %s; want 400 saying %q", c.name, status, b, c.want)
		}
	}
	if status, _, b := s.do("/v1/chat/completions", chatBody, idemKey(strings.Repeat("k", 255))); status != 200 {
		t.Errorf("a 255-character key: %d %s", status, b)
	}
	if st := s.mock.Stats(); st.Total != 1 {
		t.Errorf("%d generations; want one, for the valid key", st.Total)
	}
}

// A generation that fails reaches its leader and its joiner, once each,
// the same error; it is not stored, and the key then generates anew.
func TestIdempotentFailureIsNotStored(t *testing.T) {
	g := newGate()
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Retries = config.Retries{} // one upstream call per generation
	}, withTransport(g))
	leader := s.send("/v1/chat/completions", chatBody, idemKey("fails", "X-Mock-Fail", "500"))
	waitFor(t, "the leader's call", func() bool { return g.started.Load() == 1 })
	joiner := s.send("/v1/chat/completions", chatBody, idemKey("fails"))
	waitFor(t, "the duplicate to join", func() bool { return gauge(t, s, "sluice_idempotency_participants") == 2 })
	close(g.open)
	a, b := <-leader, <-joiner
	if a.status != 500 || b.status != 500 || !bytes.Equal(a.body, b.body) || errorType(t, a.body) == "" {
		t.Fatalf("leader %d %s, joiner %d %s; want the provider's 500 for both", a.status, a.body, b.status, b.body)
	}
	if st := s.mock.Stats(); st.Total != 1 {
		t.Fatalf("%d upstream calls; want one", st.Total)
	}
	status, h, body := s.do("/v1/chat/completions", chatBody, idemKey("fails"))
	if status != 200 || h.Get("Idempotent-Replayed") != "" {
		t.Errorf("after the failure: %d, replayed %q: %s; want a new generation", status, h.Get("Idempotent-Replayed"), body)
	}
	if st := s.mock.Stats(); st.Total != 2 {
		t.Errorf("%d upstream calls; want a second generation", st.Total)
	}
}

// One tenant never gets another's answer: two keys of two tenants with
// one Idempotency-Key make two generations, and each replays its own.
// Two keys of one tenant share.
func TestIdempotencyKeysAreScopedToTheTenant(t *testing.T) {
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{
			{Name: "a", Tenant: "acme", SHA256: config.KeyHash("sk-a")},
			{Name: "a2", Tenant: "acme", SHA256: config.KeyHash("sk-a2")},
			{Name: "b", Tenant: "globex", SHA256: config.KeyHash("sk-b")},
		}
	})
	with := func(key string) map[string]string { return idemKey("same-key", "Authorization", "Bearer "+key) }
	_, _, a := s.do("/v1/chat/completions", chatBody, with("sk-a"))
	_, hb, b := s.do("/v1/chat/completions", chatBody, with("sk-b"))
	if hb.Get("Idempotent-Replayed") != "" || bytes.Equal(a, b) {
		t.Fatal("another tenant got tenant acme's answer")
	}
	if st := s.mock.Stats(); st.Total != 2 {
		t.Errorf("%d generations; want one per tenant", st.Total)
	}
	for _, c := range []struct {
		key  string
		want []byte
	}{{"sk-a", a}, {"sk-b", b}, {"sk-a2", a}} {
		_, h, got := s.do("/v1/chat/completions", chatBody, with(c.key))
		if h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(got, c.want) {
			t.Errorf("key %s: replayed %q, %s; want its tenant's answer", c.key, h.Get("Idempotent-Replayed"), got)
		}
	}
	if st := s.mock.Stats(); st.Total != 2 {
		t.Errorf("%d generations; the replays must make none", st.Total)
	}
}

// holdBody lets a response's first bytes through and holds the rest
// until released (or the call is cancelled).
type holdBody struct {
	io.ReadCloser
	ctx     context.Context
	left    int
	release <-chan struct{}
}

func (b *holdBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		select {
		case <-b.release:
		case <-b.ctx.Done():
			return 0, b.ctx.Err()
		}
		return b.ReadCloser.Read(p)
	}
	n, err := b.ReadCloser.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}

type holdTransport struct {
	first   int
	release chan struct{}
}

func (h *holdTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := gateway.NewTransport().RoundTrip(r)
	if err == nil {
		resp.Body = &holdBody{ReadCloser: resp.Body, ctx: r.Context(), left: h.first, release: h.release}
	}
	return resp, err
}

// A stream's first caller leaves mid-stream: the generation goes on, and
// the caller that joined it gets every byte, the same bytes the stored
// answer replays. The upstream call is held after its first events, so
// the caller leaves before the rest exists; were the call cancelled, the
// held read would fail and the joiner's stream break.
func TestIdempotentStreamOutlivesItsFirstCaller(t *testing.T) {
	hold := &holdTransport{first: 1200, release: make(chan struct{})}
	s := newStack(t, mock.Config{TPOT: time.Millisecond}, nil, withTransport(hold))
	hdr := idemKey("outlive", "X-Mock-Output-Tokens", "60")
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	resp, err := s.post(ctx, "/v1/chat/completions", streamBody, hdr)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	sseEvents(resp.Body, func(string) bool { events++; return events < 2 })
	joiner := s.send("/v1/chat/completions", streamBody, hdr)
	waitFor(t, "the duplicate to join", func() bool { return gauge(t, s, "sluice_idempotency_participants") == 2 })
	leave()
	resp.Body.Close()
	waitFor(t, "the first caller to leave", func() bool { return gauge(t, s, "sluice_idempotency_participants") == 1 })
	close(hold.release)
	a := <-joiner
	if a.err != nil || a.status != 200 || !bytes.HasSuffix(a.body, []byte("data: [DONE]\n\n")) || bytes.Contains(a.body, []byte("error")) {
		t.Fatalf("joiner: %d %v:\n%s\nwant the whole stream", a.status, a.err, a.body)
	}
	content := 0
	sseEvents(bytes.NewReader(a.body), func(d string) bool {
		if strings.Contains(d, `"content":" `) {
			content++
		}
		return true
	})
	if content != 60 {
		t.Errorf("the joiner got %d tokens; want all 60", content)
	}
	_, h, replay := s.do("/v1/chat/completions", streamBody, hdr)
	if h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replay, a.body) {
		t.Errorf("the stored answer differs from the joiner's stream:\n%s", replay)
	}
	if st := s.mock.Stats(); st.Total != 1 || st.CancelledByClient != 0 {
		t.Errorf("upstream: %d calls, %d cancelled; want one, never cancelled", st.Total, st.CancelledByClient)
	}
}

// When every caller of a generation has left, its upstream call is
// cancelled at once, as a lone client's would be (invariant 2).
func TestIdempotentGenerationEndsWithItsLastCaller(t *testing.T) {
	s := newStack(t, mock.Config{TPOT: 20 * time.Millisecond}, nil)
	hdr := idemKey("abandoned", "X-Mock-Output-Tokens", "2000") // 40 s
	open := func() (context.CancelFunc, io.ReadCloser) {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := s.post(ctx, "/v1/chat/completions", streamBody, hdr)
		if err != nil {
			t.Fatal(err)
		}
		events := 0
		sseEvents(resp.Body, func(string) bool { events++; return events < 3 })
		return cancel, resp.Body
	}
	leaveFirst, first := open()
	leaveSecond, second := open()
	if p := gauge(t, s, "sluice_idempotency_participants"); p != 2 {
		t.Fatalf("%v participants; want the two callers", p)
	}
	leaveFirst()
	first.Close()
	waitFor(t, "the first caller to leave", func() bool { return gauge(t, s, "sluice_idempotency_participants") == 1 })
	// The second still gets the stream, fresh tokens included.
	events := 0
	if err := sseEvents(second, func(string) bool { events++; return events < 5 }); err != nil || events < 5 {
		t.Fatalf("the remaining caller's stream stopped after %d more events: %v", events, err)
	}
	if st := s.mock.Stats(); st.CancelledByClient != 0 || st.InFlight != 1 {
		t.Fatalf("upstream: %d cancelled, %d in flight; want the call still running", st.CancelledByClient, st.InFlight)
	}
	leaveSecond()
	second.Close()
	left := time.Now()
	lag := measureLag()
	waitFor(t, "the upstream call to be cancelled", func() bool { return s.mock.Stats().CancelledByClient == 1 })
	took, late := time.Since(left), lag.Worst()
	t.Logf("upstream cancelled %v after the last caller left", took.Round(time.Millisecond))
	if took > 100*time.Millisecond+late {
		t.Errorf("upstream saw the cancel %v after the last caller left (this machine ran up to %v late); want within 100ms", took, late)
	}
	if st := s.mock.Stats(); st.Total != 1 {
		t.Errorf("%d upstream calls; want one", st.Total)
	}
}

// A request whose key's answer is already in flight is served even when
// the gateway would shed it from its headers: it costs no slot.
func TestIdempotentJoinerIsNotShed(t *testing.T) {
	g := newGate()
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Admission.MaxInFlight = 1
		c.Admission.Queue.MaxDepth = 0
		c.Admission.Priorities = config.Priorities{}
	}, withTransport(g))
	leader := s.send("/v1/chat/completions", chatBody, idemKey("full"))
	waitFor(t, "the leader's call", func() bool { return g.started.Load() == 1 })
	if status, _, b := s.do("/v1/chat/completions", chatBody, idemKey("another")); status != 503 {
		t.Fatalf("another key with the gateway full: %d %s; want 503", status, b)
	}
	joiner := s.send("/v1/chat/completions", chatBody, idemKey("full"))
	waitFor(t, "the duplicate to join", func() bool { return gauge(t, s, "sluice_idempotency_participants") == 2 })
	close(g.open)
	if a, b := <-leader, <-joiner; a.status != 200 || b.status != 200 || !bytes.Equal(a.body, b.body) {
		t.Errorf("leader %d, joiner %d; want one answer for both", a.status, b.status)
	}
}

// Across replicas sharing a store, a duplicate of a request in flight on
// another replica is refused with 409 and Retry-After (with another body,
// 422), and once the original has finished it replays its answer.
func TestIdempotencyAcrossReplicas(t *testing.T) {
	addr := redistest.Addr(t)
	prefix := fmt.Sprintf("sluicetest:idem:%d:", time.Now().UnixNano())
	cleanRedis(t, addr, prefix)
	fleetConfig := func(id string) func(*config.Config) {
		return func(c *config.Config) {
			c.Store = "redis://" + addr + "/0"
			c.Fleet.Prefix, c.Fleet.ID = prefix, id
			c.Fleet.Timeout = config.Duration(200 * time.Millisecond)
		}
	}
	g := newGate()
	a := newStack(t, mock.Config{}, fleetConfig("a"), withTransport(g))
	b := newStack(t, mock.Config{}, fleetConfig("b"))
	first := a.send("/v1/chat/completions", chatBody, idemKey("fleet"))
	waitFor(t, "replica a's call", func() bool { return g.started.Load() == 1 })

	status, h, body := b.do("/v1/chat/completions", chatBody, idemKey("fleet"))
	if status != 409 || h.Get("Retry-After") == "" || !strings.Contains(string(body), "still in progress") {
		t.Errorf("replica b, in flight on a: %d, Retry-After %q, %s; want 409 with a Retry-After", status, h.Get("Retry-After"), body)
	}
	if status, _, body := b.do("/v1/chat/completions", strings.Replace(chatBody, "hi", "yo", 1), idemKey("fleet")); status != 422 {
		t.Errorf("replica b, another body: %d %s; want 422", status, body)
	}
	close(g.open)
	got := <-first
	if got.status != 200 {
		t.Fatalf("replica a: %d %s", got.status, got.body)
	}
	status, h, body = b.do("/v1/chat/completions", chatBody, idemKey("fleet"))
	if status != 200 || h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(body, got.body) {
		t.Errorf("replica b after a finished: %d, replayed %q; want a's answer", status, h.Get("Idempotent-Replayed"))
	}
	if st := b.mock.Stats(); st.Total != 0 {
		t.Errorf("replica b made %d upstream calls; want none", st.Total)
	}
	if r := idemResults(t, b, "in_progress"); r != 1 {
		t.Errorf("sluice_idempotency_total{result=in_progress} %v on b; want 1", r)
	}
}

// cleanRedis deletes the test's keys under prefix when it ends.
func cleanRedis(t *testing.T, addr, prefix string) {
	t.Cleanup(func() {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
	})
}

// Requests without an Idempotency-Key cost what they did before the
// feature: not one allocation more with it on than off.
func TestIdempotencyAbsentAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	allocs := func(enabled bool) float64 {
		cfg := config.Default("http://127.0.0.1:1")
		cfg.Idempotency.Enabled = &enabled
		serve := cannedHandler(t, cfg)
		one := func() { serve() }
		for range 50 {
			one() // warm pools and label caches
		}
		return testing.AllocsPerRun(500, one)
	}
	off, on := allocs(false), allocs(true)
	t.Logf("allocations per request without Idempotency-Key: %.1f with the feature off, %.1f on", off, on)
	if on > off+0.5 {
		t.Errorf("a request without Idempotency-Key allocates %.1f times with the feature on, %.1f off", on, off)
	}
}

// What a Host holds for idempotency outlives a reload: an answer stored
// before it is replayed after. And a shutdown ends a shared generation
// the way it ends any request: every caller gets the error event that
// says why, not a cut.
func TestIdempotencyAcrossReloadAndShutdown(t *testing.T) {
	hs := newHostStack(t, mock.Config{TTFT: 10 * time.Millisecond, TPOT: 100 * time.Millisecond}, nil)
	post := func(body string, hdr map[string]string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, hs.url+"/v1/chat/completions", strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	read := func(resp *http.Response) []byte {
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	hdr := idemKey("across-reload", "X-Mock-Output-Tokens", "3")
	first := read(post(chatBody, hdr))
	if err := hs.h.Reload(hostConfig(hs.mockURL, nil)); err != nil {
		t.Fatal(err)
	}
	resp := post(chatBody, hdr)
	if again := read(resp); resp.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again, first) {
		t.Fatalf("after a reload: replayed %q, %s; want the stored answer", resp.Header.Get("Idempotent-Replayed"), again)
	}

	long := idemKey("at-shutdown", "X-Mock-Output-Tokens", "200") // 20 s
	leader, joiner := post(streamBody, long), post(streamBody, long)
	participants := func() bool {
		resp, err := http.Get(hs.admin + "/metrics")
		if err != nil {
			return false
		}
		return strings.Contains(string(read(resp)), "sluice_idempotency_participants 2")
	}
	waitFor(t, "both callers to share the generation", participants)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- hs.h.Shutdown(ctx, 0) }()
	for name, resp := range map[string]*http.Response{"leader": leader, "joiner": joiner} {
		if b := read(resp); !strings.Contains(string(b), "shutting down") || !strings.HasSuffix(string(b), "\n\n") {
			t.Errorf("%s at shutdown: %q; want the error event saying why", name, b[max(0, len(b)-300):])
		}
	}
	<-done
}

// Duplicates spend nothing of their key's budget: with room for one
// request, the first generates, its joiner and its replay are answered,
// and only a new request is refused.
func TestIdempotentDuplicatesSpendNoBudget(t *testing.T) {
	g := newGate()
	s := newStack(t, mock.Config{}, func(c *config.Config) {
		c.Keys = []config.Key{{Name: "one", SHA256: config.KeyHash("sk-one"), Limits: config.Limits{RPM: 6}}} // a burst of 1
	}, withTransport(g))
	hdr := idemKey("budget", "Authorization", "Bearer sk-one")
	leader := s.send("/v1/chat/completions", chatBody, hdr)
	waitFor(t, "the leader's call", func() bool { return g.started.Load() == 1 })
	joiner := s.send("/v1/chat/completions", chatBody, hdr)
	waitFor(t, "the duplicate to join", func() bool { return gauge(t, s, "sluice_idempotency_participants") == 2 })
	close(g.open)
	if a, b := <-leader, <-joiner; a.status != 200 || b.status != 200 {
		t.Fatalf("leader %d %s, joiner %d %s", a.status, a.body, b.status, b.body)
	}
	if status, _, body := s.do("/v1/chat/completions", chatBody, hdr); status != 200 {
		t.Errorf("replay: %d %s; want 200, spending nothing", status, body)
	}
	if status, _, _ := s.do("/v1/chat/completions", chatBody, bearer("sk-one")); status != 429 {
		t.Errorf("a new request: %d; want 429, the budget spent by the leader alone", status)
	}
}

// A panic in a shared generation is contained like any other: its
// callers get a 500, its slot is released (the stack checks), and the
// key is free again.
func TestIdempotentGenerationPanic(t *testing.T) {
	s := newStack(t, mock.Config{}, nil, withTransport(panicTransport{}))
	for range 2 {
		status, h, body := s.do("/v1/chat/completions", chatBody, idemKey("panics"))
		if status != 500 || errorType(t, body) != "server_error" || h.Get("Idempotent-Replayed") != "" {
			t.Fatalf("status %d, replayed %q: %s; want a 500 of its own each time", status, h.Get("Idempotent-Replayed"), body)
		}
	}
	if n := idemResults(t, s, "leader"); n != 2 {
		t.Errorf("%v leaders; want 2, the failure not stored", n)
	}
}
