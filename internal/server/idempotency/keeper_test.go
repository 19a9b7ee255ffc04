package idempotency

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	fpA = FingerprintOf("POST", "/v1/chat/completions", []byte(`{"n":1}`))
	fpB = FingerprintOf("POST", "/v1/chat/completions", []byte(`{"n":2}`))
	kA  = NewKey("tenant:a", "key-1")
)

// readAll reads a participant's whole answer: its head, every byte, and
// how it ended (nil for a whole answer).
func readAll(t *testing.T, rd *Reader) (Head, []byte, error) {
	t.Helper()
	defer rd.Leave(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := rd.Head(ctx)
	if err != nil {
		return h, nil, err
	}
	var body []byte
	for {
		p, err := rd.Read(ctx)
		body = append(body, p...)
		if err == io.EOF {
			return h, body, nil
		}
		if err != nil {
			return h, body, err
		}
	}
}

func begin(t *testing.T, k *Keeper, fp Fingerprint, want Role) Ticket {
	t.Helper()
	tk := k.Begin(context.Background(), kA, fp, time.Minute)
	if tk.Role != want {
		t.Fatalf("Begin: %s; want %s", tk.Role, want)
	}
	return tk
}

// generate writes an answer into a led flight: its status, headers and
// body in chunks.
func generate(f *Flight, status int, chunks ...string) {
	rec := f.Recorder()
	rec.Header().Set("Content-Type", "text/event-stream")
	rec.WriteHeader(status)
	for _, c := range chunks {
		rec.Write([]byte(c))
	}
}

// Duplicates that arrive while the leader generates join it: every
// participant reads the whole answer from its first byte, each at its
// own pace, and the answer is then stored and replayed.
func TestJoinAndReplay(t *testing.T) {
	k := New(Options{Store: NewMemory(MemoryOptions{})})
	lead := begin(t, k, fpA, Lead)
	rec := lead.Flight.Recorder()
	rec.Header().Set("Content-Type", "text/event-stream")
	rec.Header().Set("X-Request-Id", "req_1")
	rec.WriteHeader(200)
	rec.Header().Set("X-After", "too late") // not part of the answer
	rec.Write([]byte("data: one\n\n"))

	// One joins after the first event, one before the end: both read
	// from the first byte.
	early := begin(t, k, fpA, Join)
	rec.Write([]byte("data: two\n\n"))
	late := begin(t, k, fpA, Join)
	rec.Write([]byte("data: [DONE]\n\n"))

	var wg sync.WaitGroup
	bodies := make([][]byte, 3)
	for i, rd := range []*Reader{lead.Reader, early.Reader, late.Reader} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, b, err := readAll(t, rd)
			if err != nil || h.Status != 200 || h.Header.Get("X-Request-Id") != "req_1" || h.Header.Get("X-After") != "" {
				t.Errorf("participant %d: %v, head %+v", i, err, h)
			}
			bodies[i] = b
		}()
	}
	k.Finish(lead.Flight, Complete, "note")
	wg.Wait()
	want := "data: one\n\ndata: two\n\ndata: [DONE]\n\n"
	for i, b := range bodies {
		if string(b) != want {
			t.Errorf("participant %d read %q; want %q", i, b, want)
		}
	}
	if n := lead.Flight.Note(); n != "note" {
		t.Errorf("Note() = %v; want the leader's", n)
	}

	replay := begin(t, k, fpA, Replay)
	h, b, err := readAll(t, replay.Reader)
	if err != nil || !h.Replayed || h.Status != 200 || string(b) != want {
		t.Errorf("replay: %v, head %+v, body %q", err, h, b)
	}
	if k.Flights().Len() != 0 {
		t.Errorf("%d flights left in the table", k.Flights().Len())
	}
	// Another body under the key is a conflict, stored or in flight.
	begin(t, k, fpB, Conflict)
}

func TestConflictInFlight(t *testing.T) {
	k := New(Options{})
	lead := begin(t, k, fpA, Lead)
	begin(t, k, fpB, Conflict)
	k.Finish(lead.Flight, Failed, nil)
	lead.Reader.Leave(nil)
}

// A generation runs while anybody reads it: the leader's client leaving
// does not cancel it, the last participant leaving does, with its cause.
func TestLastToLeaveCancels(t *testing.T) {
	k := New(Options{})
	lead := begin(t, k, fpA, Lead)
	join := begin(t, k, fpA, Join)
	ctx := lead.Flight.Context()
	lead.Reader.Leave(context.Canceled)
	if ctx.Err() != nil {
		t.Fatal("the generation was cancelled while a participant still read it")
	}
	generate(lead.Flight, 200, "data: x\n\n")
	gone := errors.New("client gone")
	join.Reader.Leave(gone)
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the generation was not cancelled when its last participant left")
	}
	if !errors.Is(context.Cause(ctx), gone) {
		t.Errorf("cause %v; want the last participant's", context.Cause(ctx))
	}
	// Its writes now fail: nobody would read them.
	if _, err := lead.Flight.Recorder().Write([]byte("more")); !errors.Is(err, ErrNoReaders) {
		t.Errorf("write after everyone left: %v; want ErrNoReaders", err)
	}
	// A duplicate does not join a flight nobody reads: it leads anew.
	next := begin(t, k, fpA, Lead)
	k.Finish(lead.Flight, Failed, nil)
	if k.Flights().Len() != 1 {
		t.Error("the abandoned flight's end removed its successor")
	}
	k.Finish(next.Flight, Failed, nil)
	next.Reader.Leave(nil)
}

// A failure reaches every participant once and is not stored; an
// aborted answer tells each participant to abort; either way the key is
// free at once.
func TestFailuresAreNotStored(t *testing.T) {
	for _, c := range []struct {
		name    string
		end     End
		status  int
		wantErr error
	}{
		{"an error answer", Failed, 502, nil},
		{"a stream that ended with an error event", Failed, 200, nil},
		{"an aborted answer", Aborted, 200, ErrAborted},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := New(Options{Store: NewMemory(MemoryOptions{})})
			lead := begin(t, k, fpA, Lead)
			join := begin(t, k, fpA, Join)
			generate(lead.Flight, c.status, `{"error":"x"}`)
			k.Finish(lead.Flight, c.end, nil)
			for _, rd := range []*Reader{lead.Reader, join.Reader} {
				h, b, err := readAll(t, rd)
				if !errors.Is(err, c.wantErr) || h.Status != c.status || string(b) != `{"error":"x"}` {
					t.Errorf("participant: %v, status %d, %q", err, h.Status, b)
				}
			}
			next := begin(t, k, fpA, Lead) // not Replay: nothing stored
			k.Finish(next.Flight, Failed, nil)
			next.Reader.Leave(nil)
		})
	}
}

// An answer larger than the cap is not stored and cannot be joined once
// its first bytes are let go; a flight holds about the cap, whatever the
// answer's size, by making the writer wait for the slowest reader.
func TestLargeAnswers(t *testing.T) {
	const capBytes, chunk, chunks = 1000, 300, 20
	k := New(Options{Store: NewMemory(MemoryOptions{}), MaxResponseBytes: capBytes})
	lead := begin(t, k, fpA, Lead)
	slow := begin(t, k, fpA, Join)
	f := lead.Flight
	rec := f.Recorder()
	rec.WriteHeader(200)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		for range chunks {
			rec.Write(bytes.Repeat([]byte("y"), chunk))
		}
	}()
	// The leader's reader keeps up; the slow one reads nothing yet.
	leadGot := make(chan int)
	go func() {
		n := 0
		for {
			p, err := lead.Reader.Read(context.Background())
			n += len(p)
			if err != nil {
				leadGot <- n
				return
			}
		}
	}()
	held := func() (end int64, waits bool) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.base + int64(len(f.buf)), f.writerWaits
	}
	trimmed := func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.base > 0
	}
	waitUntil(t, "the writer to wait for the slow reader", func() bool { _, w := held(); return w })
	if end, _ := held(); end > capBytes+chunk {
		t.Errorf("the writer ran %d bytes ahead of a reader that read nothing; want at most the cap and one write, %d", end, capBytes+chunk)
	}
	slowGot, refused := 0, false
	for slowGot < chunks*chunk {
		p, err := slow.Reader.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		slowGot += len(p)
		if !refused && trimmed() {
			// Its first bytes are gone: a newcomer cannot start from them.
			if tk := k.Begin(context.Background(), kA, fpA, time.Minute); tk.Role != InProgress || tk.RetryAfter <= 0 {
				t.Errorf("joining an answer whose start is gone: %s, Retry-After %v; want in_progress", tk.Role, tk.RetryAfter)
			}
			refused = true
		}
	}
	<-wrote
	k.Finish(f, Complete, nil)
	if n := <-leadGot; n != chunks*chunk || slowGot != chunks*chunk {
		t.Errorf("read %d and %d bytes; want all %d each", n, slowGot, chunks*chunk)
	}
	if !refused {
		t.Error("the flight kept the whole answer, six times the cap")
	}
	lead.Reader.Leave(nil)
	slow.Reader.Leave(nil)
	next := begin(t, k, fpA, Lead) // not stored: too large
	k.Finish(next.Flight, Failed, nil)
	next.Reader.Leave(nil)
}

// waitUntil polls cond until it holds, failing the test after a while.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// A participant that stalls does not hold the generation back for the
// others once it leaves.
func TestLeavingUnblocksTheWriter(t *testing.T) {
	k := New(Options{MaxResponseBytes: 100})
	lead := begin(t, k, fpA, Lead)
	stalled := begin(t, k, fpA, Join)
	rec := lead.Flight.Recorder()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for range 10 {
			rec.Write(bytes.Repeat([]byte("z"), 60))
		}
	}()
	go func() {
		ctx := context.Background()
		for {
			if _, err := lead.Reader.Read(ctx); err != nil {
				return
			}
		}
	}()
	stalled.Reader.Leave(nil)
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer still waits for a participant that left")
	}
	k.Finish(lead.Flight, Complete, nil)
	lead.Reader.Leave(nil)
}

// A reader's wait ends with its context, with the context's cause.
func TestReaderWaitsEndWithTheirContext(t *testing.T) {
	k := New(Options{})
	lead := begin(t, k, fpA, Lead)
	ctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("client left")
	go cancel(why)
	if _, err := lead.Reader.Head(ctx); !errors.Is(err, why) {
		t.Errorf("Head: %v; want the context's cause", err)
	}
	generate(lead.Flight, 200)
	if _, err := lead.Reader.Read(ctx); !errors.Is(err, why) {
		t.Errorf("Read: %v; want the context's cause", err)
	}
	k.Finish(lead.Flight, Failed, nil)
	lead.Reader.Leave(nil)
}

// A store that errs is taken as empty: the request leads.
func TestStoreErrorsDecideLocally(t *testing.T) {
	k := New(Options{Store: failingStore{}})
	lead := begin(t, k, fpA, Lead)
	begin(t, k, fpA, Join).Reader.Leave(nil)
	generate(lead.Flight, 200, "{}")
	k.Finish(lead.Flight, Complete, nil)
	lead.Reader.Leave(nil)
}

type failingStore struct{}

func (failingStore) Lookup(context.Context, Key, Claim) (*Response, *Holder, error) {
	return nil, nil, errors.New("down")
}

func (failingStore) Finish(context.Context, Key, Claim, *Response) error { return errors.New("down") }

// While the leader asks the store, duplicates join its flight, and get
// whatever the store says: here, another replica's claim.
func TestJoinersShareTheStoresVerdict(t *testing.T) {
	s := &gatedStore{release: make(chan struct{}), asked: make(chan struct{})}
	k := New(Options{Store: s})
	got := make(chan Ticket)
	go func() { got <- k.Begin(context.Background(), kA, fpA, time.Minute) }()
	<-s.asked
	join := begin(t, k, fpA, Join)
	close(s.release)
	if tk := <-got; tk.Role != InProgress || tk.RetryAfter != 500*time.Millisecond {
		t.Errorf("leader: %s, Retry-After %v; want in_progress after the claim's 500ms", tk.Role, tk.RetryAfter)
	}
	h, _, err := readAll(t, join.Reader)
	if err != nil || h.Verdict != InProgress || h.Status != 0 {
		t.Errorf("joiner: %v, head %+v; want the in_progress verdict", err, h)
	}
}

// gatedStore answers every Lookup with another replica's claim on fpA,
// once released.
type gatedStore struct {
	release, asked chan struct{}
}

func (s *gatedStore) Lookup(ctx context.Context, _ Key, _ Claim) (*Response, *Holder, error) {
	close(s.asked)
	<-s.release
	return nil, &Holder{Fingerprint: fpA, Left: 500 * time.Millisecond}, nil
}

func (s *gatedStore) Finish(context.Context, Key, Claim, *Response) error { return nil }

// The Recorder is what the gateway's relays need of a ResponseWriter.
func TestRecorderAsResponseWriter(t *testing.T) {
	k := New(Options{})
	lead := begin(t, k, fpA, Lead)
	var w http.ResponseWriter = lead.Flight.Recorder()
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Errorf("SetWriteDeadline: %v", err)
	}
	w.WriteHeader(http.StatusContinue) // informational: not the answer
	w.Write([]byte("implicit 200"))
	if err := rc.Flush(); err != nil {
		t.Errorf("Flush: %v", err)
	}
	k.Finish(lead.Flight, Complete, nil)
	h, b, err := readAll(t, lead.Reader)
	if err != nil || h.Status != 200 || !strings.HasPrefix(string(b), "implicit") {
		t.Errorf("%v, %d, %q", err, h.Status, b)
	}
}

// Known says, with no store round trip, whether a key's answer is
// already on its way: in flight here, or stored in memory. Participants
// counts the requests reading flights.
func TestKnownAndParticipants(t *testing.T) {
	k := New(Options{Store: NewMemory(MemoryOptions{})})
	if k.Known(kA) {
		t.Fatal("an unused key is known")
	}
	lead := begin(t, k, fpA, Lead)
	join := begin(t, k, fpA, Join)
	if !k.Known(kA) || k.Flights().Participants() != 2 {
		t.Errorf("in flight: known %v, %d participants; want true, 2", k.Known(kA), k.Flights().Participants())
	}
	begin(t, k, fpB, Conflict) // refused: not a participant
	generate(lead.Flight, 200, "{}")
	k.Finish(lead.Flight, Complete, nil)
	lead.Reader.Leave(nil)
	join.Reader.Leave(nil)
	join.Reader.Leave(nil) // twice is harmless
	if !k.Known(kA) || k.Flights().Participants() != 0 {
		t.Errorf("stored: known %v, %d participants; want true, 0", k.Known(kA), k.Flights().Participants())
	}
	// A refusal from a shared store leaves no participant behind.
	r := New(Options{Store: &gatedStore{release: closed(), asked: make(chan struct{})}})
	begin(t, r, fpA, InProgress)
	if n := r.Flights().Participants(); n != 0 {
		t.Errorf("%d participants after an in-progress refusal", n)
	}
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
