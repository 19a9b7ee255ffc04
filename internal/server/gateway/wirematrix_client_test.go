package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The wire matrix's client: it reads the gateway's stream as a client
// library would (any legal SSE framing, any JSON spelling, since an
// untranslated stream goes out as the provider wrote it) and keeps what
// a verdict needs. And the request log line, read back.

// wireRead is what a client got.
type wireRead struct {
	status      int
	text        string
	deltas      int // text deltas
	argDeltas   int // tool-call argument deltas
	finish      string
	usage       int // -1: none
	usageChunks int // OpenAI chunks with usage and no choices
	terminators int
	errors      []string
	badJSON     []string
	took        time.Duration
	raw         []byte
}

// sseReader splits a stream into events, by the SSE rules: lines end in
// CRLF, LF or a lone CR; data: lines join with LF; comments and other
// fields are skipped.
type sseReader struct {
	r       *bufio.Reader
	event   string
	data    []string
	hasData bool
	raw     []byte
}

// next is the next event's name and data; io.EOF at the end.
func (s *sseReader) next() (string, string, error) {
	for {
		line, err := s.line()
		if err != nil {
			return "", "", err
		}
		if line == "" {
			if !s.hasData {
				s.event = ""
				continue
			}
			name, data := s.event, strings.Join(s.data, "\n")
			s.event, s.data, s.hasData = "", s.data[:0], false
			return name, data, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			s.event = value
		case "data":
			s.data, s.hasData = append(s.data, value), true
		}
	}
}

func (s *sseReader) line() (string, error) {
	var b []byte
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			if len(b) > 0 && errors.Is(err, io.EOF) {
				return string(b), nil
			}
			return "", err
		}
		s.raw = append(s.raw, c)
		switch c {
		case '\n':
			return string(b), nil
		case '\r':
			if n, err := s.r.Peek(1); err == nil && n[0] == '\n' {
				s.r.ReadByte()
				s.raw = append(s.raw, '\n')
			}
			return string(b), nil
		}
		b = append(b, c)
	}
}

// wireRequest sends one streamed request for model and reads the answer;
// with stopAfter > 0 it leaves after that many text or argument deltas.
func wireRequest(url, model string, anthropic, includeUsage, tools bool, stopAfter int) (out wireRead) {
	path, body := "/v1/chat/completions", map[string]any{
		"model": model, "stream": true,
		"messages": []any{map[string]any{"role": "user", "content": "wire matrix"}},
	}
	if includeUsage && !anthropic {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if anthropic {
		path, body["max_tokens"] = "/v1/messages", 1000
	}
	if tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
		if anthropic {
			body["tools"] = []any{map[string]any{"name": "lookup", "input_schema": schema}}
		} else {
			body["tools"] = []any{map[string]any{"type": "function", "function": map[string]any{"name": "lookup", "parameters": schema}}}
		}
	}
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	if anthropic {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	out.usage = -1
	start := time.Now()
	defer func() { out.took = time.Since(start) }()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		out.errors = append(out.errors, err.Error())
		return out
	}
	defer resp.Body.Close()
	out.status = resp.StatusCode
	if resp.StatusCode != 200 {
		out.raw, _ = io.ReadAll(resp.Body)
		return out
	}
	s := &sseReader{r: bufio.NewReader(resp.Body)}
	defer func() { out.raw = s.raw }()
	for {
		name, data, err := s.next()
		if err != nil {
			if !errors.Is(err, io.EOF) && stopAfter == 0 {
				out.errors = append(out.errors, "read: "+err.Error())
			}
			return out
		}
		out.see(anthropic, name, data)
		if stopAfter > 0 && out.deltas+out.argDeltas >= stopAfter {
			cancel()
			return out
		}
	}
}

func (o *wireRead) see(anthropic bool, name, data string) {
	if !anthropic && data == "[DONE]" {
		o.terminators++
		return
	}
	var v struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
		Delta struct {
			Type        string  `json:"type"`
			Text        *string `json:"text"`
			PartialJSON string  `json:"partial_json"`
			StopReason  *string `json:"stop_reason"`
		} `json:"delta"`
		Usage *struct {
			OutputTokens     *int `json:"output_tokens"`
			CompletionTokens *int `json:"completion_tokens"`
		} `json:"usage"`
		Choices []struct {
			Delta struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(data), &v); err != nil {
		o.badJSON = append(o.badJSON, data)
		return
	}
	if anthropic {
		if v.Type == "error" || name == "error" {
			o.errors = append(o.errors, string(v.Error))
		}
		switch v.Type {
		case "content_block_delta":
			if v.Delta.Text != nil {
				o.text += *v.Delta.Text
				o.deltas++
			}
			if v.Delta.PartialJSON != "" {
				o.argDeltas++
			}
		case "message_delta":
			if v.Delta.StopReason != nil {
				o.finish = *v.Delta.StopReason
			}
			if v.Usage != nil && v.Usage.OutputTokens != nil {
				o.usage = *v.Usage.OutputTokens
			}
		case "message_stop":
			o.terminators++
		}
		return
	}
	if len(v.Error) > 0 && v.Choices == nil {
		o.errors = append(o.errors, string(v.Error))
		return
	}
	if v.Usage != nil && v.Usage.CompletionTokens != nil {
		o.usage = *v.Usage.CompletionTokens
		if len(v.Choices) == 0 {
			o.usageChunks++
		}
	}
	for _, c := range v.Choices {
		if c.Delta.Content != nil && *c.Delta.Content != "" {
			o.text += *c.Delta.Content
			o.deltas++
		}
		for _, tc := range c.Delta.ToolCalls {
			if tc.Function.Arguments != "" {
				o.argDeltas++
			}
		}
		if c.FinishReason != nil {
			o.finish = *c.FinishReason
		}
	}
}

// wireLog is the gateway's request log line.
type wireLog struct {
	found        bool
	outcome      string
	reason       string
	continued    string
	outputTokens int
	ttft         time.Duration
	line         string
}

func readWireLog(logs string) wireLog {
	for line := range strings.SplitSeq(logs, "\n") {
		var v struct {
			Msg          string `json:"msg"`
			Outcome      string `json:"outcome"`
			Reason       string `json:"reason"`
			Continued    string `json:"continued"`
			OutputTokens int    `json:"output_tokens"`
			TTFT         int64  `json:"ttft"`
		}
		if json.Unmarshal([]byte(line), &v) != nil || v.Msg != "request" {
			continue
		}
		return wireLog{found: true, outcome: v.Outcome, reason: v.Reason, continued: v.Continued,
			outputTokens: v.OutputTokens, ttft: time.Duration(v.TTFT), line: line}
	}
	return wireLog{}
}

func (l wireLog) String() string {
	if !l.found {
		return "no request log line"
	}
	return fmt.Sprintf("log outcome=%s reason=%s output_tokens=%d ttft=%s continued=%q", l.outcome, l.reason, l.outputTokens, l.ttft, l.continued)
}
