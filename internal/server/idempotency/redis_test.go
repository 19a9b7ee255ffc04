package idempotency

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-gw/sluice/internal/server/redistest"
)

// Two replicas share answers and claims: a claim refuses the other
// replica's duplicates (with another body, as a conflict), the answer is
// stored with its TTL and the claim released, and the other replica then
// replays it.
func TestRedisStore(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	a := NewRedis(rdb, RedisOptions{Prefix: prefix, Replica: "a", TTL: time.Minute})
	b := NewRedis(rdb, RedisOptions{Prefix: prefix, Replica: "b", TTL: time.Minute})
	claim := Claim{Fingerprint: fpA, Token: "t1", TTL: 30 * time.Second}

	r, h, err := a.Lookup(ctx, kA, claim)
	if err != nil || r != nil || h != nil {
		t.Fatalf("first lookup: %v, %v, %v; want a claim", r, h, err)
	}
	if left := rdb.PTTL(ctx, a.names(kA)[1]).Val(); left <= 0 || left > 30*time.Second {
		t.Errorf("the claim expires in %v; want the claim's TTL, 30s", left)
	}
	_, h, err = b.Lookup(ctx, kA, Claim{Fingerprint: fpA, Token: "t2", TTL: time.Minute})
	if err != nil || h == nil || h.Fingerprint != fpA || h.Left <= 0 || h.Left > 30*time.Second {
		t.Fatalf("the other replica's lookup: holder %+v, %v; want replica a's claim", h, err)
	}
	if _, h, _ := b.Lookup(ctx, kA, Claim{Fingerprint: fpB, Token: "t3", TTL: time.Minute}); h == nil || h.Fingerprint != fpA {
		t.Errorf("another body's lookup: holder %+v; want replica a's claim, whose fingerprint differs", h)
	}

	want := &Response{Fingerprint: fpA, Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}}, Body: []byte(`{"ok":true}`)}
	if err := a.Finish(ctx, kA, claim, want); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, a.names(kA)[1]).Val(); n != 0 {
		t.Error("the claim outlived its flight")
	}
	if left := rdb.PTTL(ctx, a.names(kA)[0]).Val(); left <= 30*time.Second || left > time.Minute {
		t.Errorf("the answer expires in %v; want the TTL, 1m", left)
	}
	got, h, err := b.Lookup(ctx, kA, Claim{Fingerprint: fpA, Token: "t4", TTL: time.Minute})
	if err != nil || h != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("replay on the other replica: %+v, %v, %v; want %+v", got, h, err, want)
	}
}

// A replica's own claim that its flights no longer hold is stale (the
// flight has ended, and is releasing it): a new flight takes it over.
// Releasing only ever releases the flight's own claim.
func TestRedisStaleOwnClaim(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	a := NewRedis(rdb, RedisOptions{Prefix: prefix, Replica: "a"})
	old := Claim{Fingerprint: fpA, Token: "old", TTL: time.Minute}
	if _, h, err := a.Lookup(ctx, kA, old); h != nil || err != nil {
		t.Fatal(h, err)
	}
	next := Claim{Fingerprint: fpA, Token: "new", TTL: time.Minute}
	if _, h, err := a.Lookup(ctx, kA, next); h != nil || err != nil {
		t.Fatalf("own stale claim: holder %+v, %v; want it taken over", h, err)
	}
	a.Finish(ctx, kA, old, nil) // the old flight ends late
	if v := rdb.Get(ctx, a.names(kA)[1]).Val(); !strings.HasSuffix(v, "new") {
		t.Errorf("the old flight's end released the new flight's claim (marker %q)", v)
	}
	a.Finish(ctx, kA, next, nil)
	if n := rdb.Exists(ctx, a.names(kA)...).Val(); n != 0 {
		t.Errorf("%d names left after a failed flight; want none (nothing stored, claim released)", n)
	}
}

func TestRedisEntryCap(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	s := NewRedis(rdb, RedisOptions{Prefix: prefix, Replica: "a", MaxEntryBytes: 1000})
	c := Claim{Fingerprint: fpA, Token: "t", TTL: time.Minute}
	s.Lookup(ctx, kA, c)
	s.Finish(ctx, kA, c, &Response{Fingerprint: fpA, Status: 200, Body: bytes.Repeat([]byte("x"), 2000)})
	if n := rdb.Exists(ctx, s.names(kA)...).Val(); n != 0 {
		t.Errorf("an answer over the entry cap was stored, or its claim kept (%d names)", n)
	}
}

// Keepers on two replicas, over one Redis: in-replica duplicates join,
// the other replica's are refused as in progress until the answer is
// stored, and then replayed.
func TestKeepersAcrossReplicas(t *testing.T) {
	rdb, prefix := redistest.Client(t)
	a := New(Options{Store: NewRedis(rdb, RedisOptions{Prefix: prefix, Replica: "a"})})
	b := New(Options{Store: NewRedis(rdb, RedisOptions{Prefix: prefix, Replica: "b"})})
	lead := begin(t, a, fpA, Lead)
	join := begin(t, a, fpA, Join)
	if tk := begin(t, b, fpA, InProgress); tk.RetryAfter <= 0 || tk.RetryAfter > time.Second {
		t.Errorf("Retry-After %v; want up to a second", tk.RetryAfter)
	}
	begin(t, b, fpB, Conflict)
	generate(lead.Flight, 200, `{"ok":`, `true}`)
	a.Finish(lead.Flight, Complete, nil)
	for _, rd := range []*Reader{lead.Reader, join.Reader} {
		if _, body, err := readAll(t, rd); err != nil || string(body) != `{"ok":true}` {
			t.Errorf("participant: %q, %v", body, err)
		}
	}
	rep := begin(t, b, fpA, Replay)
	if h, body, err := readAll(t, rep.Reader); err != nil || !h.Replayed || string(body) != `{"ok":true}` || h.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("replay on replica b: %+v, %q, %v", h, body, err)
	}
}

func TestResponseEncoding(t *testing.T) {
	r := &Response{Fingerprint: fpB, Status: 201, Header: http.Header{"A": {"1", "2"}, "B": {""}}, Body: []byte("body\x00bytes")}
	got, err := decodeResponse(encodeResponse(r))
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, r)
	}
	empty := &Response{Fingerprint: fpA, Status: 200, Header: http.Header{}, Body: []byte{}}
	if got, err := decodeResponse(encodeResponse(empty)); err != nil || got.Status != 200 || len(got.Body) != 0 {
		t.Errorf("empty answer: %+v, %v", got, err)
	}
	enc := encodeResponse(r)
	for n := range len(enc) - len(r.Body) {
		if _, err := decodeResponse(enc[:n]); err == nil {
			t.Errorf("a stored answer cut to %d bytes decoded", n)
		}
	}
	if _, err := decodeResponse([]byte("not an answer at all, but long enough to look like one")); err == nil {
		t.Error("garbage decoded")
	}
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(encodeResponse(&Response{Fingerprint: fpA, Status: 200, Header: http.Header{"A": {"b"}}, Body: []byte("x")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponse(b)
		if err != nil {
			return
		}
		if again, err := decodeResponse(encodeResponse(r)); err != nil || again.Status != r.Status || !bytes.Equal(again.Body, r.Body) {
			t.Errorf("a decoded answer does not survive a round trip: %v", err)
		}
	})
}
