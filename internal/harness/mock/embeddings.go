package mock

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
)

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	s.serveCall(w, r, openAI{}, func(body []byte) (*call, error) {
		var q struct {
			Model          string          `json:"model"`
			Input          json.RawMessage `json:"input"`
			Dimensions     *int            `json:"dimensions"`
			EncodingFormat string          `json:"encoding_format"`
		}
		if err := json.Unmarshal(body, &q); err != nil {
			return nil, badJSON(err)
		}
		inputs := splitInput(q.Input)
		if len(inputs) == 0 {
			return nil, errors.New("input must be a non-empty string or array")
		}
		dim := s.cfg.EmbeddingDim
		if q.Dimensions != nil {
			if *q.Dimensions < 1 || *q.Dimensions > 65536 {
				return nil, errors.New("dimensions must be between 1 and 65536")
			}
			dim = *q.Dimensions
		}
		if q.EncodingFormat != "" && q.EncodingFormat != "float" && q.EncodingFormat != "base64" {
			return nil, errors.New("encoding_format must be float or base64")
		}
		c := &call{model: q.Model, promptTokens: tokensFor(promptBytes(q.Input)), noTokens: true}
		model := s.modelName(q.Model)
		c.enc = func(*plan) encoder {
			return &embedEnc{s.cfg.Seed, model, inputs, dim, q.EncodingFormat == "base64", c.promptTokens}
		}
		return c, nil
	})
}

// splitInput returns each input item's raw JSON: a lone string or token
// list is one item, an array of them is many.
func splitInput(raw json.RawMessage) []json.RawMessage {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil
		}
		return []json.RawMessage{raw}
	}
	// A flat list of numbers is one tokenised input, not many.
	var ids []int
	if len(items) > 0 && json.Unmarshal(raw, &ids) == nil {
		return []json.RawMessage{raw}
	}
	return items
}

type embedEnc struct {
	seed   uint64
	model  string
	inputs []json.RawMessage
	dim    int
	base64 bool
	prompt int
}

type embedding struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

func (e *embedEnc) body(reply) []byte {
	data := make([]embedding, len(e.inputs))
	for i, in := range e.inputs {
		v := vector(e.seed, in, e.dim)
		data[i] = embedding{"embedding", i, v}
		if e.base64 {
			buf := make([]byte, 0, 4*len(v))
			for _, f := range v {
				buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
			}
			data[i].Embedding = base64.StdEncoding.EncodeToString(buf)
		}
	}
	b, _ := json.Marshal(map[string]any{
		"object": "list", "data": data, "model": e.model,
		"usage": map[string]int{"prompt_tokens": e.prompt, "total_tokens": e.prompt},
	})
	return b
}

// vector is a unit vector that depends only on the seed and the input,
// never on call order, so the same text always embeds the same way.
func vector(seed uint64, input json.RawMessage, dim int) []float32 {
	var s string
	if json.Unmarshal(input, &s) != nil {
		s = string(input)
	}
	h := fnv.New64a()
	h.Write([]byte(s))
	rng := rand.New(rand.NewPCG(seed, h.Sum64()))
	v := make([]float32, dim)
	var norm float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		norm += x * x
	}
	if norm = math.Sqrt(norm); norm > 0 {
		for i := range v {
			v[i] = float32(float64(v[i]) / norm)
		}
	}
	return v
}

func (e *embedEnc) streamHead() []byte          { return nil }
func (e *embedEnc) streamToken(string) []byte   { return nil }
func (e *embedEnc) toolHead() []byte            { return nil }
func (e *embedEnc) toolToken(string) []byte     { return nil }
func (e *embedEnc) streamTail(int, bool) []byte { return nil }
func (e *embedEnc) ping() []byte                { return nil }
