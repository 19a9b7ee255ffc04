package bedrock

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

func TestEventStreamRoundTripOneByteAtATime(t *testing.T) {
	msgs := []Message{
		eventMessage("messageStart", []byte(`{"role":"assistant"}`)),
		eventMessage("contentBlockDelta", []byte(`{"delta":{"text":"héllo"},"contentBlockIndex":0}`)),
		{Headers: nil, Payload: nil},
		exceptionMessage("throttlingException", []byte(`{"message":"slow down"}`)),
	}
	var stream []byte
	for _, m := range msgs {
		stream = AppendMessage(stream, m)
	}
	d := NewDecoder(iotest.OneByteReader(bytes.NewReader(stream)))
	for i, want := range msgs {
		got, err := d.Next()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(got.Payload, want.Payload) || len(got.Headers) != len(want.Headers) {
			t.Fatalf("message %d: got %+v, want %+v", i, got, want)
		}
		for j, h := range want.Headers {
			if got.Headers[j].Name != h.Name || got.Headers[j].Type != h.Type || !bytes.Equal(got.Headers[j].Value, h.Value) {
				t.Fatalf("message %d header %d: got %+v, want %+v", i, j, got.Headers[j], h)
			}
		}
	}
	if _, err := d.Next(); err != io.EOF {
		t.Fatalf("after the last message: %v, want io.EOF", err)
	}
}

// The SDK's encoder writes what this decoder reads, every header type
// included, and the SDK's decoder reads what AppendMessage writes.
func TestEventStreamAgreesWithTheSDK(t *testing.T) {
	var hs eventstream.Headers
	hs.Set(":message-type", eventstream.StringValue("event"))
	hs.Set(":event-type", eventstream.StringValue("contentBlockDelta"))
	hs.Set("t", eventstream.BoolValue(true))
	hs.Set("f", eventstream.BoolValue(false))
	hs.Set("b", eventstream.Int8Value(-3))
	hs.Set("s", eventstream.Int16Value(300))
	hs.Set("i", eventstream.Int32Value(70000))
	hs.Set("l", eventstream.Int64Value(1<<40))
	hs.Set("y", eventstream.BytesValue([]byte{0, 1, 2}))
	hs.Set("ts", eventstream.TimestampValue(time.UnixMilli(1700000000123)))
	hs.Set("u", eventstream.UUIDValue{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	var buf bytes.Buffer
	payload := []byte(`{"delta":{"text":"hi"},"contentBlockIndex":0}`)
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: hs, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	m, err := NewDecoder(&buf).Next()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Payload, payload) || m.Get(":event-type") != "contentBlockDelta" || m.Get(":message-type") != "event" {
		t.Fatalf("decoded %+v", m)
	}
	want := map[string]struct {
		typ uint8
		val []byte
	}{
		"t": {typeTrue, nil}, "f": {typeFalse, nil}, "b": {typeByte, []byte{0xfd}},
		"s": {typeShort, binary.BigEndian.AppendUint16(nil, 300)}, "i": {typeInt, binary.BigEndian.AppendUint32(nil, 70000)},
		"l": {typeLong, binary.BigEndian.AppendUint64(nil, 1<<40)}, "y": {typeBytes, []byte{0, 1, 2}},
		"ts": {typeTimestamp, binary.BigEndian.AppendUint64(nil, 1700000000123)},
		"u":  {typeUUID, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
	}
	seen := 0
	for _, h := range m.Headers {
		w, ok := want[h.Name]
		if !ok {
			continue
		}
		seen++
		if h.Type != w.typ || !bytes.Equal(h.Value, w.val) {
			t.Errorf("header %q: type %d value %x, want type %d value %x", h.Name, h.Type, h.Value, w.typ, w.val)
		}
	}
	if seen != len(want) {
		t.Fatalf("read %d of %d typed headers", seen, len(want))
	}

	// And the other way.
	framed := AppendMessage(nil, Message{Headers: []Header{StringHeader(":event-type", "metadata"), {Name: "n", Type: typeInt, Value: []byte{0, 0, 1, 0}}}, Payload: []byte(`{}`)})
	sm, err := eventstream.NewDecoder().Decode(bytes.NewReader(framed), nil)
	if err != nil {
		t.Fatalf("the SDK's decoder refused our frame: %v", err)
	}
	if sm.Headers.Get(":event-type").String() != "metadata" || sm.Headers.Get("n").Get() != int32(256) || string(sm.Payload) != "{}" {
		t.Fatalf("the SDK read %+v", sm)
	}
}

func TestEventStreamRejectsBadCRCs(t *testing.T) {
	good := AppendMessage(nil, eventMessage("messageStart", []byte(`{"role":"assistant"}`)))
	for name, at := range map[string]int{"prelude CRC": 9, "headers": 14, "payload": len(good) - 6, "message CRC": len(good) - 1} {
		bad := bytes.Clone(good)
		bad[at] ^= 0x40
		_, err := NewDecoder(bytes.NewReader(bad)).Next()
		if !errors.Is(err, translate.ErrResponse) {
			t.Errorf("%s flipped: %v, want ErrResponse", name, err)
		}
	}
}

// failAfter fails the test if more than n bytes are read from it.
type failAfter struct {
	t *testing.T
	r io.Reader
	n int
}

func (f *failAfter) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.n -= n
	if f.n < 0 {
		f.t.Fatalf("read past the prelude")
	}
	return n, err
}

func TestEventStreamBoundsAMessageBeforeReadingIt(t *testing.T) {
	var prelude [preludeLen]byte
	binary.BigEndian.PutUint32(prelude[0:], 2<<20)
	binary.BigEndian.PutUint32(prelude[4:], 0)
	binary.BigEndian.PutUint32(prelude[8:], crc32.ChecksumIEEE(prelude[:8]))
	// The rest of the stream would be 2 MiB of anything; the decoder
	// must refuse from the prelude alone.
	r := io.MultiReader(bytes.NewReader(prelude[:]), strings.NewReader(strings.Repeat("x", 64)))
	d := NewDecoder(&failAfter{t: t, r: iotest.OneByteReader(r), n: preludeLen})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := d.Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, translate.ErrResponse) || !strings.Contains(err.Error(), "bound") {
		t.Fatalf("got %v, want an over-the-bound ErrResponse", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Fatalf("refusing a 2 MiB prelude allocated %d bytes", grew)
	}
	// A message exactly at the bound is read.
	payload := bytes.Repeat([]byte("a"), native.MaxEvent-minMessage)
	framed := AppendMessage(nil, Message{Payload: payload})
	if m, err := NewDecoder(bytes.NewReader(framed)).Next(); err != nil || len(m.Payload) != len(payload) {
		t.Fatalf("a message of exactly MaxEvent bytes: %v", err)
	}
	framed = AppendMessage(nil, Message{Payload: append(payload, 'b')})
	if _, err := NewDecoder(bytes.NewReader(framed)).Next(); !errors.Is(err, translate.ErrResponse) {
		t.Fatalf("a message one byte over MaxEvent: %v", err)
	}
}

func TestEventStreamCutAndMalformed(t *testing.T) {
	good := AppendMessage(nil, eventMessage("messageStart", []byte(`{"role":"assistant"}`)))
	for n := 1; n < len(good); n++ {
		_, err := NewDecoder(bytes.NewReader(good[:n])).Next()
		if !errors.Is(err, translate.ErrTruncated) {
			t.Fatalf("cut at %d: %v, want ErrTruncated", n, err)
		}
	}
	// Headers length past the message.
	bad := bytes.Clone(good)
	binary.BigEndian.PutUint32(bad[4:], uint32(len(good)))
	binary.BigEndian.PutUint32(bad[8:], crc32.ChecksumIEEE(bad[:8]))
	if _, err := NewDecoder(bytes.NewReader(bad)).Next(); !errors.Is(err, translate.ErrResponse) {
		t.Fatalf("headers longer than the message: %v", err)
	}
	// An unknown header type, CRCs right.
	framed := AppendMessage(nil, Message{Headers: []Header{{Name: "x", Type: 42}}})
	if _, err := NewDecoder(bytes.NewReader(framed)).Next(); !errors.Is(err, translate.ErrResponse) {
		t.Fatalf("unknown header type: %v", err)
	}
	// A read error is returned as it is.
	boom := errors.New("boom")
	if _, err := NewDecoder(iotest.ErrReader(boom)).Next(); err != boom {
		t.Fatalf("read error: %v", err)
	}
}
