package protocol

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
)

// recorded streams (testdata/streams), with how they are read.
var recorded = []struct {
	file  string
	ep    Endpoint
	d     Dialect
	typed bool // every event's data names its type: event: lines may go
}{
	{"openai_chat.sse", Endpoint{Name: "chat_completions", Dialect: OpenAI, Streams: true}, OpenAI, false},
	{"openai_tools.sse", Endpoint{Name: "chat_completions", Dialect: OpenAI, Streams: true}, OpenAI, false},
	{"anthropic.sse", Endpoint{Name: "messages", Dialect: Anthropic, Streams: true}, Anthropic, true},
	{"responses.sse", Responses, OpenAI, true},
}

// record is an event's record with its bytes copied, for comparing.
type record struct {
	Invalid, Head, Keepalive, Tool, OtherChoice, Error, Done, BlockStart, BlockStop bool
	Text, Finish, ID, Model                                                         string
	OtherText, Reasoning, Refusal, ToolArgs, Block                                  int
	Created                                                                         int64
	Usage                                                                           EventUsage
}

func recordOf(ev *Event) record {
	return record{ev.Invalid, ev.Head, ev.Keepalive, ev.Tool, ev.OtherChoice, ev.Error, ev.Done, ev.BlockStart, ev.BlockStop,
		string(ev.Text), string(ev.Finish), string(ev.ID), string(ev.Model),
		ev.OtherText, ev.Reasoning, ev.Refusal, ev.ToolArgs, ev.Block, ev.Created, ev.Usage}
}

// reading is everything the readers decide about a stream.
type reading struct {
	Verdict              string
	Records              []record // of the events with data
	Facts                StreamFacts
	Text                 string
	HeadEvents           int // events with data in StreamHead's head
	HeadToken            bool
	Out, In, Cached      int64
	Reported, InReported bool
	Finish               string
}

// read feeds stream to the readers in the chunks cuts make.
func read(t testing.TB, ep Endpoint, d Dialect, stream []byte, cuts []int) reading {
	var r reading
	ch := NewStreamCheckFor(ep, d)
	defer ch.Release()
	var text []byte
	ch.CaptureText(&text)
	events := 0
	ch.onEvent = func(ev Event) {
		if n := ch.Facts().Events; n > events {
			events = n
			r.Records = append(r.Records, recordOf(&ev))
		}
	}
	u := NewStreamUsage(ep, d)
	var auto StreamUsage // told no dialect
	defer u.Release()
	defer auto.Release()
	prev := 0
	for _, c := range append(cuts, len(stream)) {
		ch.Feed(stream[prev:c])
		u.Write(stream[prev:c])
		auto.Write(stream[prev:c])
		prev = c
	}
	r.Verdict = ch.End()
	r.Facts, r.Text = *ch.Facts(), string(text)
	head, token := StreamHeadFor(ep, d, stream)
	hc := NewStreamCheckFor(ep, d)
	hc.Feed(stream[:head])
	r.HeadEvents, r.HeadToken = hc.Facts().Events, token
	hc.Release()
	n, ok := u.Tokens()
	in, inOK := u.InputTokens()
	r.Out, r.Reported, r.In, r.InReported, r.Cached, r.Finish = int64(n), ok, in, inOK, u.CachedTokens(), u.FinishReason()
	an, aok := auto.Tokens()
	ain, ainOK := auto.InputTokens()
	if an != n || aok != ok || ain != in || ainOK != inOK || auto.CachedTokens() != r.Cached || auto.FinishReason() != r.Finish {
		t.Errorf("a meter told no dialect reads %d %v %d %v %d %q; told, %d %v %d %v %d %q",
			an, aok, ain, ainOK, auto.CachedTokens(), auto.FinishReason(), n, ok, in, inOK, r.Cached, r.Finish)
	}
	return r
}

// randomCuts splits n bytes at up to k random points, in order.
func randomCuts(r *rand.Rand, n, k int) []int {
	var cuts []int
	at := 0
	for range k {
		if at >= n {
			break
		}
		at += 1 + r.IntN(max(1, min(n-at, 2*n/max(k, 1))))
		if at < n {
			cuts = append(cuts, at)
		}
	}
	return cuts
}

func loadRecorded(t testing.TB, i int) []byte {
	b, err := os.ReadFile("testdata/streams/" + recorded[i].file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkInvariance re-encodes recorded stream i by seed, cuts it at
// random, and requires every decision to be the recording's.
func checkInvariance(t testing.TB, i int, seed uint64) {
	rec := recorded[i]
	orig := loadRecorded(t, i)
	want := read(t, rec.ep, rec.d, orig, nil)
	e := newReencoder(seed)
	enc := e.stream(string(orig), rec.typed)
	got := read(t, rec.ep, rec.d, enc, randomCuts(e.r, len(enc), 1+e.r.IntN(12)))
	if !reflect.DeepEqual(got, want) {
		diff := ""
		if len(got.Records) == len(want.Records) {
			for j := range got.Records {
				if got.Records[j] != want.Records[j] {
					diff = fmt.Sprintf("event %d:\n got %+v\nwant %+v", j, got.Records[j], want.Records[j])
					break
				}
			}
		}
		t.Fatalf("%s re-encoded (%s):\n%q\n got %+v\nwant %+v\n%s", rec.file, e, enc, got, want, diff)
	}
}

// The recordings themselves read as their dialect says.
func TestRecordedStreams(t *testing.T) {
	for i, rec := range recorded {
		r := read(t, rec.ep, rec.d, loadRecorded(t, i), nil)
		if r.Verdict != StreamOK || !r.Facts.Token || !r.HeadToken || !r.Reported || !r.InReported || r.Finish == "" || r.Facts.ID() == "" {
			t.Errorf("%s: %+v", rec.file, r)
		}
		if rec.file != "openai_tools.sse" && r.Text != "Hello"+"wörld 😀a/b\"q\"<b>&amp;data: [DONE]event: error\"type\":\"message_stop\"\"finish_reason\":\"stop\"line\nbreaktab\there end." {
			t.Errorf("%s: text %q", rec.file, r.Text)
		}
	}
}

// Invariance: any legal re-encoding of a stream, cut anywhere, reads
// the same: records, facts, verdict, first token, usage, finish, text.
func TestReencodedStreamsReadTheSame(t *testing.T) {
	n := 300
	if testing.Short() {
		n = 50
	}
	for i := range recorded {
		for seed := range uint64(n) {
			checkInvariance(t, i, seed)
		}
	}
}

func FuzzStreamInvariance(f *testing.F) {
	for i := range recorded {
		f.Add(uint8(i), uint64(i*7+1))
	}
	f.Fuzz(func(t *testing.T, which uint8, seed uint64) {
		checkInvariance(t, int(which)%len(recorded), seed)
	})
}
