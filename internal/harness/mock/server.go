package mock

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluice-gw/sluice/internal/model/upstream"
	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/sseenc"
	"github.com/sluice-gw/sluice/internal/wire/vendors"
)

// Server is a fake OpenAI- and Anthropic-compatible provider. It is an
// http.Handler; Start serves it on a listener of its own.
type Server struct {
	cfg   Config
	now   func() time.Time
	start time.Time
	mux   *http.ServeMux
	sched *scheduler
	// encoding is Config.Encoding, parsed.
	encoding sseenc.Encoding

	rngMu   sync.Mutex // guards planner and answers
	planner *upstream.Planner
	answers *answers

	mu    sync.Mutex
	stats Stats
	last  RequestInfo
}

// Stats counts generation calls (chat, completions, embeddings, messages).
type Stats struct {
	InFlight     int64 `json:"in_flight"`
	PeakInFlight int64 `json:"peak_in_flight"`
	Completed    int64 `json:"completed"`
	// CancelledByClient counts calls whose request context ended before
	// the mock finished: the evidence that a gateway propagated a cancel.
	CancelledByClient int64 `json:"cancelled_by_client"`
	ErrorsInjected    int64 `json:"errors_injected"`
	// Rejected counts refusals because the waiting queue was full.
	Rejected    int64 `json:"rejected"`
	BadRequests int64 `json:"bad_requests"`
	Running     int   `json:"running"`
	Waiting     int   `json:"waiting"`
	Total       int64 `json:"total"`
}

// RequestInfo is what the mock last received under /v1/ (or on a native
// API's route), so gateway tests can check model rewriting, key
// injection and body passthrough.
type RequestInfo struct {
	Method string
	// Path is the request's path: for a native API's call, the
	// vendor's route (e.g. /v1beta/models/m:generateContent), whose
	// Body is then the Messages request it became.
	Path          string
	Model         string // the body's "model", if it parsed
	Authorization string
	APIKey        string // X-Api-Key
	Header        http.Header
	Body          []byte
}

// New builds a server. Zero fields of cfg take their defaults (see Config).
// It panics if cfg.Validate fails: an in-process Config is the programmer's
// to get right, and a silently odd mock would mislead the tests using it.
// Main and LoadScript report bad user input as errors instead.
func New(cfg Config) *Server { return NewWithClock(cfg, time.Now) }

// NewWithClock is New with the clock that brownout and failure windows
// are judged by, as offsets from the server's start on it. Sleeps always
// use real timers.
func NewWithClock(cfg Config, now func() time.Time) *Server {
	if err := cfg.Validate(); err != nil {
		panic("mock.New: " + err.Error())
	}
	enc, err := sseenc.Parse(cfg.Encoding)
	if err != nil {
		panic("mock.New: " + err.Error())
	}
	for _, f := range cfg.Failures {
		if _, err := sseenc.Parse(f.Encoding); err != nil {
			panic("mock.New: failure rule: " + err.Error())
		}
	}
	if cfg.OutputTokens == (TokenRange{}) {
		cfg.OutputTokens = upstream.DefaultOutputTokens
	}
	if cfg.EmbeddingDim == 0 {
		cfg.EmbeddingDim = 8
	}
	if len(cfg.Models) == 0 {
		cfg.Models = []string{"mock-gpt", "mock-claude"}
	}
	cfg.Brownouts = append([]Brownout(nil), cfg.Brownouts...)
	cfg.Failures = append([]Failure(nil), cfg.Failures...)
	s := &Server{
		cfg:     cfg,
		now:     now,
		start:   now(),
		planner: upstream.NewPlanner(cfg),
		answers: newAnswers(cfg),
		sched:   newScheduler(cfg),

		encoding: enc,
	}
	m := http.NewServeMux()
	m.HandleFunc("/v1/chat/completions", post(openAI{}, s.handleChat))
	m.HandleFunc("/v1/completions", post(openAI{}, s.handleCompletions))
	m.HandleFunc("/v1/embeddings", post(openAI{}, s.handleEmbeddings))
	m.HandleFunc("/v1/responses", post(openAI{}, s.handleResponses))
	m.HandleFunc("/v1/messages", post(anthropic{}, s.handleMessages))
	m.HandleFunc("/v1/messages/count_tokens", post(anthropic{}, s.handleCountTokens))
	m.HandleFunc("/v1/models", s.handleModels)
	m.Handle("/metrics", s.metricsHandler())
	m.HandleFunc("/stats", s.handleStats)
	m.HandleFunc("/stats/reset", post(openAI{}, s.handleStatsReset))
	m.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	// The native APIs (Gemini, Bedrock's Converse) are served by the
	// Messages handler through their Servers (native.Handler), so every
	// fault works on them as on the others.
	natives := vendors.Servers()
	nativeAPI := native.Handler(natives, post(anthropic{}, s.handleMessages))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if native.Matches(natives, r) {
			nativeAPI.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), vendorPath{}, r.URL.Path)))
			return
		}
		writeJSON(w, http.StatusNotFound, openAI{}.errorJSON(http.StatusNotFound, "no such endpoint: "+r.URL.Path))
	})
	s.mux = m
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// post rejects other methods in the endpoint's own error shape.
func post(proto protocol, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeJSON(w, http.StatusMethodNotAllowed, proto.errorJSON(http.StatusMethodNotAllowed, r.Method+" not allowed; use POST"))
			return
		}
		h(w, r)
	}
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	running, waiting := s.sched.counts()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Running, st.Waiting = running, waiting
	return st
}

// ResetStats zeroes the counters; the peak restarts from the calls in
// flight now, so a test measures only its own concurrency.
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = Stats{InFlight: s.stats.InFlight, PeakInFlight: s.stats.InFlight}
}

// LastRequest returns a copy of the last request received under /v1/.
func (s *Server) LastRequest() RequestInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	ri := s.last
	ri.Header = ri.Header.Clone()
	ri.Body = append([]byte(nil), ri.Body...)
	return ri
}

// vendorPath is the context key of a native API call's own path.
type vendorPath struct{}

func (s *Server) record(r *http.Request, body []byte, model string) {
	path := r.URL.Path
	if p, ok := r.Context().Value(vendorPath{}).(string); ok {
		path = p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last = RequestInfo{
		Method:        r.Method,
		Path:          path,
		Model:         model,
		Authorization: r.Header.Get("Authorization"),
		APIKey:        r.Header.Get("X-Api-Key"),
		Header:        r.Header.Clone(),
		Body:          body,
	}
}

// outcome is how one generation call ended, for the counters.
type outcome int

const (
	outCompleted outcome = iota
	outCancelled
	outInjected
	outInjectedCancelled // a hang, or an injected delay the client gave up on
	outRejected
	outBadRequest
)

func (s *Server) begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Total++
	s.stats.InFlight++
	s.stats.PeakInFlight = max(s.stats.PeakInFlight, s.stats.InFlight)
}

func (s *Server) end(o outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.InFlight--
	switch o {
	case outCompleted:
		s.stats.Completed++
	case outCancelled:
		s.stats.CancelledByClient++
	case outInjected:
		s.stats.ErrorsInjected++
	case outInjectedCancelled:
		s.stats.ErrorsInjected++
		s.stats.CancelledByClient++
	case outRejected:
		s.stats.Rejected++
	case outBadRequest:
		s.stats.BadRequests++
	}
}

// TimeScale is the factor every time in the behaviour was multiplied by
// (Config.Scaled, sluice mock --time-scale): 1 for real time.
func (s *Server) TimeScale() float64 {
	if s.cfg.TimeScale == 0 {
		return 1
	}
	return s.cfg.TimeScale
}

// StatsJSON is what GET /stats answers: the counters, and the time scale
// the mock runs at, which sluice load checks against its own.
type StatsJSON struct {
	Stats
	TimeScale float64 `json:"time_scale"`
}

func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	b, _ := json.Marshal(StatsJSON{Stats: s.Stats(), TimeScale: s.TimeScale()})
	writeJSON(w, http.StatusOK, b)
}

func (s *Server) handleStatsReset(w http.ResponseWriter, r *http.Request) {
	s.ResetStats()
	s.handleStats(w, r)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	s.record(r, nil, "")
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range s.cfg.Models {
		list.Data = append(list.Data, model{m, "model", s.start.Unix(), "sluice-mock"})
	}
	b, _ := json.Marshal(list)
	writeJSON(w, http.StatusOK, b)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// Start serves s on addr ("127.0.0.1:0", or "", picks a free port) and returns its
// root URL, e.g. http://127.0.0.1:41234 (OpenAI and Anthropic clients want
// baseURL+"/v1"). stop gives calls in flight half a second to finish, then
// cancels the rest (hangs included); it is safe to call more than once.
func (s *Server) Start(addr string) (baseURL string, stop func(), err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	shutdown, _ := s.serve(ln)
	var once sync.Once
	return "http://" + ln.Addr().String(), func() { once.Do(func() { shutdown(500 * time.Millisecond) }) }, nil
}

// serve runs an http.Server on ln. shutdown drains for up to grace, then
// cancels every remaining call (hangs included) and waits for them to
// return, so nothing outlives it. failed reports a Serve error.
func (s *Server) serve(ln net.Listener) (shutdown func(grace time.Duration), failed <-chan error) {
	base, cancel := context.WithCancel(context.Background())
	var (
		mu       sync.Mutex // orders handlers.Add before handlers.Wait
		closed   bool
		handlers sync.WaitGroup
	)
	hs := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			if closed {
				mu.Unlock()
				http.Error(w, "shutting down", http.StatusServiceUnavailable)
				return
			}
			handlers.Add(1)
			mu.Unlock()
			defer handlers.Done()
			s.ServeHTTP(w, r)
		}),
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() {
		if err := hs.Serve(ln); err != http.ErrServerClosed {
			errc <- err
		}
	}()
	return func(grace time.Duration) {
		ctx, done := context.WithTimeout(context.Background(), grace)
		defer done()
		hs.Shutdown(ctx)
		cancel()
		hs.Close()
		mu.Lock()
		closed = true
		mu.Unlock()
		handlers.Wait()
	}, errc
}
