package bedrock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// The event-stream framing (application/vnd.amazon.eventstream) that
// ConverseStream answers in. Each message is
//
//	prelude:  total length u32 BE, headers length u32 BE, prelude CRC32 u32
//	headers:  name length u8, name, value type u8, value
//	payload
//	message CRC32 u32 over everything before it
//
// with both CRCs IEEE CRC-32.
//
// Sluice frames and reads these itself rather than through the AWS SDK's
// eventstream package: the decoder must hold at most native.MaxEvent
// bytes of one message, decided from the prelude before anything is
// allocated, and must tell a stream cut mid-message (ErrTruncated) from a
// bad frame (ErrResponse) and from the reader's own error; the SDK's
// decoder allows payloads of 16 MiB and reports these cases in its own
// terms. The format is small and fixed, and the tests check both
// directions against the SDK's encoder and decoder.

const (
	preludeLen = 12
	crcLen     = 4
	// minMessage is a message with no headers and no payload.
	minMessage = preludeLen + crcLen
)

// Header value types.
const (
	typeTrue      = 0
	typeFalse     = 1
	typeByte      = 2
	typeShort     = 3
	typeInt       = 4
	typeLong      = 5
	typeBytes     = 6
	typeString    = 7
	typeTimestamp = 8
	typeUUID      = 9
)

// Header is one event-stream header. Value holds the value's bytes as
// framed (big-endian numbers, raw strings and byte arrays, no length
// prefix); booleans have none.
type Header struct {
	Name  string
	Type  uint8
	Value []byte
}

// Message is one event-stream message.
type Message struct {
	Headers []Header
	Payload []byte
}

// Get returns the value of the string or bytes header name, "" if
// there is none.
func (m *Message) Get(name string) string {
	for _, h := range m.Headers {
		if h.Name == name && (h.Type == typeString || h.Type == typeBytes) {
			return string(h.Value)
		}
	}
	return ""
}

// StringHeader is a header of type string.
func StringHeader(name, value string) Header {
	return Header{Name: name, Type: typeString, Value: []byte(value)}
}

// errFrame is a message that is not well-formed.
func errFrame(format string, args ...any) error {
	return fmt.Errorf("%w: bedrock event stream: %s", translate.ErrResponse, fmt.Sprintf(format, args...))
}

// Decoder reads event-stream messages from a reader, one at a time,
// holding at most native.MaxEvent bytes of one.
type Decoder struct {
	r       io.Reader
	prelude [preludeLen]byte
}

// NewDecoder reads messages from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{r: r} }

// errCut is a message cut short by the end of the stream.
var errCut = errors.New("bedrock event stream: cut mid-message")

// Next reads the next message. At the stream's end between messages it
// returns io.EOF; a message cut short returns an error wrapping
// translate.ErrTruncated; a message larger than native.MaxEvent, or one
// not well-formed (lengths, CRCs, headers), wraps translate.ErrResponse;
// any other read error is returned as it is.
func (d *Decoder) Next() (Message, error) {
	n, err := io.ReadFull(d.r, d.prelude[:])
	switch {
	case err == io.EOF && n == 0:
		return Message{}, io.EOF
	case err == io.ErrUnexpectedEOF:
		return Message{}, fmt.Errorf("%w: %w", translate.ErrTruncated, errCut)
	case err != nil:
		return Message{}, err
	}
	total := binary.BigEndian.Uint32(d.prelude[0:4])
	headersLen := binary.BigEndian.Uint32(d.prelude[4:8])
	if got, want := crc32.ChecksumIEEE(d.prelude[:8]), binary.BigEndian.Uint32(d.prelude[8:12]); got != want {
		return Message{}, errFrame("prelude CRC %08x, computed %08x", want, got)
	}
	if total > native.MaxEvent {
		return Message{}, fmt.Errorf("%w: bedrock event stream: a message of %d bytes is over the %d-byte bound", translate.ErrResponse, total, native.MaxEvent)
	}
	if total < minMessage || uint64(headersLen) > uint64(total-minMessage) {
		return Message{}, errFrame("lengths %d (headers %d) do not fit", total, headersLen)
	}
	buf := make([]byte, total)
	copy(buf, d.prelude[:])
	if _, err := io.ReadFull(d.r, buf[preludeLen:]); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return Message{}, fmt.Errorf("%w: %w", translate.ErrTruncated, errCut)
		}
		return Message{}, err
	}
	return parseMessage(buf, headersLen)
}

// parseMessage reads one whole message whose prelude is checked.
func parseMessage(buf []byte, headersLen uint32) (Message, error) {
	end := len(buf) - crcLen
	if got, want := crc32.ChecksumIEEE(buf[:end]), binary.BigEndian.Uint32(buf[end:]); got != want {
		return Message{}, errFrame("message CRC %08x, computed %08x", want, got)
	}
	hdrs := buf[preludeLen : preludeLen+int(headersLen)]
	var m Message
	for len(hdrs) > 0 {
		nameLen := int(hdrs[0])
		if nameLen == 0 || len(hdrs) < 1+nameLen+1 {
			return Message{}, errFrame("a header name does not fit")
		}
		h := Header{Name: string(hdrs[1 : 1+nameLen]), Type: hdrs[1+nameLen]}
		hdrs = hdrs[2+nameLen:]
		size := 0
		switch h.Type {
		case typeTrue, typeFalse:
		case typeByte:
			size = 1
		case typeShort:
			size = 2
		case typeInt:
			size = 4
		case typeLong, typeTimestamp:
			size = 8
		case typeUUID:
			size = 16
		case typeBytes, typeString:
			if len(hdrs) < 2 {
				return Message{}, errFrame("header %q: its length does not fit", h.Name)
			}
			size = int(binary.BigEndian.Uint16(hdrs))
			hdrs = hdrs[2:]
		default:
			return Message{}, errFrame("header %q has unknown type %d", h.Name, h.Type)
		}
		if len(hdrs) < size {
			return Message{}, errFrame("header %q: its value does not fit", h.Name)
		}
		h.Value = hdrs[:size:size]
		hdrs = hdrs[size:]
		m.Headers = append(m.Headers, h)
	}
	m.Payload = buf[preludeLen+int(headersLen) : end : end]
	return m, nil
}

// AppendMessage appends m, framed, to dst. Header names over 255 bytes
// and string or bytes values over 65535 are cut to fit.
func AppendMessage(dst []byte, m Message) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, preludeLen)...)
	for _, h := range m.Headers {
		name := h.Name[:min(len(h.Name), 255)]
		dst = append(dst, byte(len(name)))
		dst = append(dst, name...)
		dst = append(dst, h.Type)
		v := h.Value
		switch h.Type {
		case typeBytes, typeString:
			v = v[:min(len(v), 65535)]
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
		}
		dst = append(dst, v...)
	}
	headersLen := len(dst) - start - preludeLen
	dst = append(dst, m.Payload...)
	total := len(dst) - start + crcLen
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(headersLen))
	binary.BigEndian.PutUint32(dst[start+8:], crc32.ChecksumIEEE(dst[start:start+8]))
	return binary.BigEndian.AppendUint32(dst, crc32.ChecksumIEEE(dst[start:]))
}

// eventMessage is a Converse stream event: its type and JSON payload.
func eventMessage(eventType string, payload []byte) Message {
	return Message{
		Headers: []Header{
			StringHeader(":event-type", eventType),
			StringHeader(":content-type", "application/json"),
			StringHeader(":message-type", "event"),
		},
		Payload: payload,
	}
}

// exceptionMessage is a Converse stream exception.
func exceptionMessage(exceptionType string, payload []byte) Message {
	return Message{
		Headers: []Header{
			StringHeader(":exception-type", exceptionType),
			StringHeader(":content-type", "application/json"),
			StringHeader(":message-type", "exception"),
		},
		Payload: payload,
	}
}
