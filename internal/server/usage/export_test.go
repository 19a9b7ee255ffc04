package usage

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

// exportRecorder is a recorder over a memory store holding two days of
// records for three keys in two teams.
func exportRecorder(t *testing.T) *Recorder {
	t.Helper()
	r := NewRecorder(Options{})
	err := r.Store().Add(context.Background(), "seed", []Record{
		{Day: "2026-01-01", Row: Row{"search", "core", "gpt", "gpt-4o"}, Counts: Counts{2, 100, 50, 20, 1_500_000, 3}},
		{Day: "2026-01-01", Row: Row{"search", "core", "claude", "claude-sonnet-4-5"}, Counts: Counts{1, 10, 0, 5, 250, 1}},
		{Day: "2026-01-01", Row: Row{"chat", "core", "gpt", "gpt-4o"}, Counts: Counts{3, 30, 0, 3, 7, 4}},
		{Day: "2026-01-02", Row: Row{"batch", "data", "gpt", "gpt-4o-mini"}, Counts: Counts{4, 40, 4, 4, 44, 4}},
		{Day: "2026-01-03", Row: Row{"search", "core", "gpt", "gpt-4o"}, Counts: Counts{1, 1, 1, 1, 1, 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func get(t *testing.T, h http.Handler, query string) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/usage?"+query, nil))
	return rec.Code, rec.Header(), rec.Body.String()
}

func TestExportCSV(t *testing.T) {
	r := exportRecorder(t)
	code, h, body := get(t, r, "from=2026-01-01&to=2026-01-02&format=csv")
	if code != 200 || h.Get("Content-Type") != "text/csv; charset=utf-8" || !strings.Contains(h.Get("Content-Disposition"), "usage-2026-01-01-2026-01-02.csv") {
		t.Fatalf("%d %v\n%s", code, h, body)
	}
	want := `day,key,team,model,upstream_model,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd
2026-01-01,chat,core,gpt,gpt-4o,3,4,30,0,3,7,0.000007
2026-01-01,search,core,claude,claude-sonnet-4-5,1,1,10,0,5,250,0.000250
2026-01-01,search,core,gpt,gpt-4o,2,3,100,50,20,1500000,1.500000
2026-01-02,batch,data,gpt,gpt-4o-mini,4,4,40,4,4,44,0.000044
`
	if body != want {
		t.Errorf("csv:\n%s\nwant\n%s", body, want)
	}
	for _, c := range []struct{ query, want string }{
		{"group=key", "day,key,team,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd\n2026-01-01,chat,core,3,4,30,0,3,7,0.000007\n2026-01-01,search,core,3,4,110,50,25,1500250,1.500250\n2026-01-02,batch,data,4,4,40,4,4,44,0.000044\n"},
		{"group=team", "day,team,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd\n2026-01-01,core,6,8,140,50,28,1500257,1.500257\n2026-01-02,data,4,4,40,4,4,44,0.000044\n"},
		{"group=model", "day,model,upstream_model,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd\n2026-01-01,claude,claude-sonnet-4-5,1,1,10,0,5,250,0.000250\n2026-01-01,gpt,gpt-4o,5,7,130,50,23,1500007,1.500007\n2026-01-02,gpt,gpt-4o-mini,4,4,40,4,4,44,0.000044\n"},
		{"group=day", "day,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd\n2026-01-01,6,8,140,50,28,1500257,1.500257\n2026-01-02,4,4,40,4,4,44,0.000044\n"},
		{"group=day&team=data", "day,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd\n2026-01-02,4,4,40,4,4,44,0.000044\n"},
		{"key=search&model=claude", "day,key,team,model,upstream_model,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd\n2026-01-01,search,core,claude,claude-sonnet-4-5,1,1,10,0,5,250,0.000250\n"},
		{"key=nobody", "day,key,team,model,upstream_model,requests,calls,input_tokens,cached_input_tokens,output_tokens,cost_micros,cost_usd\n"},
	} {
		_, _, body := get(t, r, "from=2026-01-01&to=2026-01-02&format=csv&"+c.query)
		if body != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.query, body, c.want)
		}
	}
}

func TestExportJSON(t *testing.T) {
	r := exportRecorder(t)
	code, h, body := get(t, r, "from=2026-01-02&to=2026-01-03&group=key")
	if code != 200 || h.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %v\n%s", code, h, body)
	}
	var v struct {
		From, To, Group string
		Rows            []map[string]any
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if v.From != "2026-01-02" || v.To != "2026-01-03" || v.Group != "key" || len(v.Rows) != 2 {
		t.Fatalf("%s", body)
	}
	want := map[string]any{"day": "2026-01-03", "key": "search", "team": "core", "requests": 1.0, "calls": 2.0, "input_tokens": 1.0,
		"cached_input_tokens": 1.0, "output_tokens": 1.0, "cost_micros": 1.0, "cost_usd": "0.000001"}
	if fmt.Sprint(v.Rows[1]) != fmt.Sprint(want) {
		t.Errorf("row: %v\nwant %v", v.Rows[1], want)
	}
	// An empty span is an empty, well-formed answer.
	_, _, body = get(t, r, "from=2025-01-01&to=2025-01-01")
	if err := json.Unmarshal([]byte(body), &v); err != nil || len(v.Rows) != 0 {
		t.Errorf("empty span: %v %s", err, body)
	}
}

// Every parameter is checked, and the 400 says what to write.
func TestExportErrors(t *testing.T) {
	r := exportRecorder(t)
	for _, c := range []struct{ query, want string }{
		{"from=2026-13-01", "from=\"2026-13-01\" is not a day; write YYYY-MM-DD"},
		{"to=yesterday", "to=\"yesterday\" is not a day"},
		{"from=2026-02-01&to=2026-01-01", "from=2026-02-01 is after to=2026-01-01"},
		{"from=2000-01-01&to=2026-01-01", "export at most 3660"},
		{"group=tenant", "group=\"tenant\": group by key, team, model, day"},
		{"format=xlsx", "format=\"xlsx\": write format=json or format=csv"},
		{"grup=key", "unknown parameter \"grup\""},
		{"key=a&key=b", "key is given 2 times"},
	} {
		code, _, body := get(t, r, c.query)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %q, want 400 with %q", c.query, code, body, c.want)
		}
	}
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/admin/usage", nil))
	if rec.Code != 405 {
		t.Errorf("POST: %d", rec.Code)
	}
	// A store that cannot be read before the answer begins: 503, which
	// says so without the store's error: that names a socket address,
	// which goes to the log only.
	var logs strings.Builder
	down := NewRecorder(Options{Store: &unreadable{}, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	code, _, body := get(t, down, "from=2026-01-01&to=2026-01-02")
	if code != 503 || !strings.Contains(body, "cannot be read") || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "dial") {
		t.Errorf("unreadable store: %d %q; want 503 saying so, with no address or dial error", code, body)
	}
	if !strings.Contains(logs.String(), "dial tcp 127.0.0.1:6379") {
		t.Errorf("the log does not have the store's error: %s", logs.String())
	}
}

type unreadable struct{ MemoryStore }

func (*unreadable) Read(context.Context, string, func(Record) error) error {
	return fmt.Errorf("dial tcp 127.0.0.1:6379: connect: connection refused")
}

// A year of records for many keys exports in the memory of one day:
// the export never holds more than one day's records at once, and the
// heap it leaves grown is a small fraction of the year's records.
func TestExportYearInBoundedMemory(t *testing.T) {
	keys, models := 200, 5 // 1,000 rows a day, 365,000 in the year
	if raceEnabled {
		keys = 40
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	q := Query{From: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC), Format: "csv"}
	var peakHeap uint64
	cw := &countingWriter{every: 1 << 20, at: func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peakHeap = max(peakHeap, m.HeapAlloc)
	}}
	st, err := Export(context.Background(), cw, &synthetic{keys: keys, models: models}, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if st.Days != 365 || st.Rows != 365*keys*models {
		t.Fatalf("exported %d days, %d rows; want 365 and %d", st.Days, st.Rows, 365*keys*models)
	}
	if st.MaxHeld > keys*models {
		t.Errorf("held %d records at once, more than a day's %d", st.MaxHeld, keys*models)
	}
	grew := int64(peakHeap) - int64(before.HeapAlloc)
	t.Logf("a year (365 days x %d rows, %d rows, %.1f MB of CSV): at most %d records held at once; heap grew at most %.1f MB while exporting",
		keys*models, st.Rows, float64(cw.n)/1e6, st.MaxHeld, float64(grew)/1e6)
	// A year's rows at ~100 B each in memory would be ~36 MB; a day's
	// is ~0.1 MB. Allow generous room for the runtime's garbage.
	if grew > 16<<20 {
		t.Errorf("the heap grew %d MB exporting a year: the export does not stream", grew>>20)
	}
}

// synthetic is a store whose every day has keys x models records.
type synthetic struct {
	MemoryStore
	keys, models int
	rows         []Row
}

func (s *synthetic) Read(ctx context.Context, day string, fn func(Record) error) error {
	if s.rows == nil {
		for k := range s.keys {
			for m := range s.models {
				s.rows = append(s.rows, Row{Key: fmt.Sprintf("key-%03d", k), Team: fmt.Sprintf("team-%d", k%7), Model: fmt.Sprintf("model-%d", m), Upstream: fmt.Sprintf("up-%d", m)})
			}
		}
	}
	for _, row := range s.rows {
		if err := fn(Record{Day: day, Row: row, Counts: Counts{Requests: 10, Input: 1000, CachedInput: 100, Output: 200, Cost: 12345}}); err != nil {
			return err
		}
	}
	return nil
}

type countingWriter struct {
	n, next int
	every   int
	at      func()
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	if w.n >= w.next {
		w.next = w.n + w.every
		w.at()
	}
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)

// The CSV parses as CSV, names with commas and quotes included.
func TestExportCSVQuoting(t *testing.T) {
	r := NewRecorder(Options{})
	r.Add(time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC), Row{Key: "k", Team: `Sales, "EMEA"`, Model: "m", Upstream: "u"}, Counts{Requests: 1})
	_, _, body := get(t, r, "from=2026-02-01&to=2026-02-01&format=csv&group=team")
	recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || len(recs) != 2 || recs[1][1] != `Sales, "EMEA"` {
		t.Errorf("%v %q", err, recs)
	}
}

// A store that fails once the answer has begun aborts the connection:
// the client never gets a short export that looks whole.
func TestExportCutShortAborts(t *testing.T) {
	r := NewRecorder(Options{Store: &failsAfter{days: 2}})
	rec := httptest.NewRecorder()
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("recovered %v, want http.ErrAbortHandler", p)
			}
		}()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/admin/usage?from=2026-01-01&to=2026-01-05&format=csv", nil))
	}()
	if rec.Code != 200 || strings.Count(rec.Body.String(), "\n") > 3 {
		t.Errorf("%d\n%s", rec.Code, rec.Body.String())
	}
}

// failsAfter reads days days, one record each, and then fails.
type failsAfter struct {
	MemoryStore
	days int
}

func (f *failsAfter) Read(_ context.Context, day string, fn func(Record) error) error {
	if f.days == 0 {
		return fmt.Errorf("connection reset")
	}
	f.days--
	return fn(Record{Day: day, Row: Row{Key: "k"}, Counts: Counts{Requests: 1}})
}
