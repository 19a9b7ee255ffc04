package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/sluice-gw/sluice/internal/wire/native"
	"github.com/sluice-gw/sluice/internal/wire/protocol"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// Kind is Gemini's native API as the config names it: kind: gemini.
func Kind() native.Kind {
	return native.Kind{Name: "gemini", Codec: Codec{}, Server: Server{}}
}

// Codec speaks Gemini's generateContent API for the gateway. The zero
// value is ready; it holds nothing, so it is safe for concurrent use.
type Codec struct{}

var _ native.Codec = Codec{}

// madeUpID prefixes the tool call ids this package makes up for
// functionCall parts that came without one. They are Sluice's own, so a
// request that sends them back leaves them out of Gemini's parts.
const madeUpID = "toolu_gemini_"

// Request implements native.Codec.
func (Codec) Request(hub []byte, model string, opts translate.Options) (*native.Call, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(hub, &top); err != nil || top == nil {
		return nil, invalid("", "", "the request body is not a JSON object")
	}
	c := &reqConv{Bender: translate.NewBender(opts), names: map[string]string{}}
	out := gmRequest{Contents: []gmContent{}}
	gen := &gmGenerationConf{}
	stream := false

	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys) // refusals name the same parameter first every time
	// messages first: tool_result parts need the tool_use names.
	if raw, ok := top["messages"]; ok {
		contents, err := c.messages(raw)
		if err != nil {
			return nil, err
		}
		out.Contents = contents
	} else {
		return nil, invalid("messages", "messages", "messages is required")
	}
	for _, k := range keys {
		raw := top[k]
		if isNull(raw) {
			continue
		}
		var err error
		switch k {
		case "model", "messages":
		case "stream":
			err = decode(raw, &stream, k)
		case "system":
			out.SystemInstruction, err = c.system(raw)
		case "max_tokens":
			gen.MaxOutputTokens = new(int64)
			err = decode(raw, gen.MaxOutputTokens, k)
		case "temperature":
			gen.Temperature = new(float64)
			err = decode(raw, gen.Temperature, k)
		case "top_p":
			gen.TopP = new(float64)
			err = decode(raw, gen.TopP, k)
		case "top_k":
			gen.TopK = new(float64)
			err = decode(raw, gen.TopK, k)
		case "stop_sequences":
			err = decode(raw, &gen.StopSequences, k)
		case "tools":
			out.Tools, err = c.tools(raw)
		case "tool_choice":
			out.ToolConfig, err = c.toolChoice(raw)
		case "metadata":
			err = c.metadata(raw)
		case "output_config":
			err = c.outputConfig(raw, gen)
		case "thinking":
			err = c.thinking(raw, gen)
		case "service_tier":
			err = c.Refuse(k, k, "Gemini has no service tier", true)
		default:
			err = c.Refuse(k, k, "Gemini's generateContent has no counterpart for "+k, false)
		}
		if err != nil {
			return nil, err
		}
	}
	if !gen.empty() {
		out.GenerationConfig = gen
	}
	if strings.Contains(strings.ToLower(model), "gemini-3") {
		signCalls(out.Contents)
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, invalid("", "", "the request cannot be written as Gemini's: "+err.Error())
	}
	p := "/models/" + url.PathEscape(model)
	if stream {
		p += ":streamGenerateContent?alt=sse"
	} else {
		p += ":generateContent"
	}
	return &native.Call{Path: p, Body: body, Stream: stream, Dropped: c.Dropped(), Reply: Reply{Model: model}}, nil
}

type reqConv struct {
	translate.Bender
	names map[string]string // tool_use id → name
}

func invalid(param, path, reason string) error {
	return &translate.Error{Kind: translate.ErrInvalid, Param: param, Path: path, Reason: reason}
}

func decode(raw json.RawMessage, v any, path string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return invalid(translate.ParamOf(path), path, "wrong type: "+err.Error())
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

type hubMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// hubBlockIn is a content block as a request carries it.
type hubBlockIn struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	Source       *hubSource      `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	CacheControl json.RawMessage `json:"cache_control"`
	Citations    json.RawMessage `json:"citations"`
}

type hubSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

func (c *reqConv) messages(raw json.RawMessage) ([]gmContent, error) {
	var msgs []hubMessage
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, invalid("messages", "messages", "messages must be an array of messages: "+err.Error())
	}
	var out []gmContent
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		var role string
		switch m.Role {
		case "user":
			role = "user"
		case "assistant":
			role = "model"
		default:
			return nil, invalid("messages.role", at+".role", fmt.Sprintf("role %q is neither user nor assistant", m.Role))
		}
		parts, err := c.content(m.Content, at+".content", role == "model")
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			continue // Gemini refuses a turn without parts
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, gmContent{Role: role, Parts: parts})
	}
	if out == nil {
		out = []gmContent{}
	}
	return out, nil
}

// blocks reads a content that is a string or an array of blocks.
func blocks(raw json.RawMessage, at string) ([]hubBlockIn, error) {
	if isNull(raw) {
		return nil, invalid(translate.ParamOf(at), at, "content is required")
	}
	var s string
	if bytes.TrimSpace(raw)[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, invalid(translate.ParamOf(at), at, err.Error())
		}
		return []hubBlockIn{{Type: "text", Text: &s}}, nil
	}
	// Sized once for every block: encoding/json grows a slice of these
	// large values by doubling.
	bs := make([]hubBlockIn, 0, elements(raw))
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, invalid(translate.ParamOf(at), at, "content must be a string or an array of blocks: "+err.Error())
	}
	return bs, nil
}

// elements is how many elements the JSON array raw holds, 0 when raw is
// not an array (or not valid JSON: encoding/json then says why).
func elements(raw json.RawMessage) int {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' || !json.Valid(raw) {
		return 0
	}
	n := 0
	for i := protocol.SkipSpace(raw, 1); i < len(raw) && raw[i] != ']'; n++ {
		if i = protocol.SkipSpace(raw, protocol.SkipValue(raw, i)); i < len(raw) && raw[i] == ',' {
			i = protocol.SkipSpace(raw, i+1)
		}
	}
	return n
}

func (c *reqConv) content(raw json.RawMessage, at string, model bool) ([]gmPart, error) {
	bs, err := blocks(raw, at)
	if err != nil {
		return nil, err
	}
	parts := make([]gmPart, 0, len(bs))
	for j, b := range bs {
		// The block's path, made only when a refusal or an error names it.
		bat := func() string { return at + "[" + strconv.Itoa(j) + "]" }
		if b.CacheControl != nil && !isNull(b.CacheControl) {
			if err := c.Refuse("messages.content.cache_control", bat()+".cache_control", "Gemini caches prompts by itself", true); err != nil {
				return nil, err
			}
		}
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, invalid("messages.content.text", bat()+".text", "a text block needs its text")
			}
			if *b.Text == "" {
				continue
			}
			parts = append(parts, gmPart{Text: ptr(*b.Text)})
		case "image", "document":
			p, err := c.media(b, bat())
			if err != nil {
				return nil, err
			}
			if p != nil {
				parts = append(parts, *p)
			}
		case "tool_use":
			if b.ID == "" || b.Name == "" {
				return nil, invalid("messages.content.id", bat(), "a tool_use block needs its id and name")
			}
			args := b.Input
			if isNull(args) {
				args = json.RawMessage("{}")
			} else if !json.Valid(args) || bytes.TrimSpace(args)[0] != '{' {
				return nil, invalid("messages.content.input", bat()+".input", "a tool_use input must be an object")
			}
			c.names[b.ID] = b.Name
			parts = append(parts, gmPart{FunctionCall: &gmFunctionCall{ID: ownID(b.ID), Name: b.Name, Args: args}})
		case "tool_result":
			p, err := c.toolResult(b, bat())
			if err != nil {
				return nil, err
			}
			parts = append(parts, *p)
		case "thinking", "redacted_thinking":
			// Gemini's thoughts carry its own signatures, not these: an
			// earlier turn's thinking is left out, as Anthropic's models
			// themselves ignore it.
			if err := c.Refuse("messages.content.thinking", bat(), "Gemini cannot take back another model's thinking", true); err != nil {
				return nil, err
			}
		case "":
			return nil, invalid("messages.content.type", bat()+".type", "a content block needs its type")
		default:
			if err := c.Refuse("messages.content."+b.Type, bat(), "Gemini has no "+b.Type+" content", false); err != nil {
				return nil, err
			}
		}
	}
	return parts, nil
}

// ownID is the id Gemini is sent for a tool call: none for one Sluice
// made up.
func ownID(id string) string {
	if strings.HasPrefix(id, madeUpID) {
		return ""
	}
	return id
}

// mimeByExt guesses a URL's media type from its extension, for Gemini's
// fileData, which wants one.
var mimeByExt = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".heic": "image/heic", ".heif": "image/heif", ".pdf": "application/pdf",
}

func (c *reqConv) media(b hubBlockIn, at string) (*gmPart, error) {
	if b.Source == nil {
		return nil, invalid("messages.content.source", at+".source", "an "+b.Type+" block needs its source")
	}
	s := b.Source
	switch s.Type {
	case "base64":
		if s.MediaType == "" || s.Data == "" {
			return nil, invalid("messages.content.source", at+".source", "a base64 source needs media_type and data")
		}
		return &gmPart{InlineData: &gmBlob{MimeType: s.MediaType, Data: s.Data}}, nil
	case "url":
		if s.URL == "" {
			return nil, invalid("messages.content.source.url", at+".source.url", "a url source needs its url")
		}
		mt := ""
		if u, err := url.Parse(s.URL); err == nil {
			mt = mimeByExt[strings.ToLower(path.Ext(u.Path))]
		}
		if mt == "" {
			err := c.Refuse("messages.content.source.url", at+".source.url", "Gemini needs a media type for a file by URL, and this URL's extension names none", false)
			return nil, err
		}
		return &gmPart{FileData: &gmFileData{MimeType: mt, FileURI: s.URL}}, nil
	case "text":
		if b.Type == "document" {
			if s.Data == "" {
				return nil, nil
			}
			return &gmPart{Text: ptr(s.Data)}, nil
		}
	}
	err := c.Refuse("messages.content.source", at+".source", fmt.Sprintf("Gemini cannot take a %s source of type %q", b.Type, s.Type), false)
	return nil, err
}

func (c *reqConv) toolResult(b hubBlockIn, at string) (*gmPart, error) {
	name, ok := c.names[b.ToolUseID]
	if !ok {
		return nil, invalid("messages.content.tool_use_id", at+".tool_use_id", fmt.Sprintf("no earlier tool_use has the id %q", b.ToolUseID))
	}
	text := ""
	if !isNull(b.Content) {
		bs, err := blocks(b.Content, at+".content")
		if err != nil {
			return nil, err
		}
		var sb strings.Builder
		for k, inner := range bs {
			iat := fmt.Sprintf("%s.content[%d]", at, k)
			if inner.CacheControl != nil && !isNull(inner.CacheControl) {
				if err := c.Refuse("messages.content.cache_control", iat+".cache_control", "Gemini caches prompts by itself", true); err != nil {
					return nil, err
				}
			}
			if inner.Type != "text" || inner.Text == nil {
				if err := c.Refuse("messages.content.content", iat, "Gemini's function responses carry text only, not "+inner.Type, false); err != nil {
					return nil, err
				}
				continue
			}
			if sb.Len() > 0 {
				sb.WriteString("\n")
			}
			sb.WriteString(*inner.Text)
		}
		text = sb.String()
	}
	key := "content"
	if b.IsError {
		key = "error"
	}
	resp, _ := json.Marshal(map[string]string{key: text})
	return &gmPart{FunctionResponse: &gmFunctionResponse{ID: ownID(b.ToolUseID), Name: name, Response: resp}}, nil
}

func (c *reqConv) system(raw json.RawMessage) (*gmContent, error) {
	bs, err := blocks(raw, "system")
	if err != nil {
		return nil, err
	}
	var parts []gmPart
	for i, b := range bs {
		at := fmt.Sprintf("system[%d]", i)
		if b.CacheControl != nil && !isNull(b.CacheControl) {
			if err := c.Refuse("system.cache_control", at+".cache_control", "Gemini caches prompts by itself", true); err != nil {
				return nil, err
			}
		}
		if b.Type != "text" || b.Text == nil {
			return nil, invalid("system.type", at, "system blocks are text blocks")
		}
		if *b.Text != "" {
			parts = append(parts, gmPart{Text: ptr(*b.Text)})
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return &gmContent{Parts: parts}, nil
}

type hubTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control"`
}

func (c *reqConv) tools(raw json.RawMessage) ([]gmTool, error) {
	var ts []hubTool
	if err := json.Unmarshal(raw, &ts); err != nil {
		return nil, invalid("tools", "tools", "tools must be an array of tools: "+err.Error())
	}
	var decls []gmFunctionDecl
	for i, t := range ts {
		at := fmt.Sprintf("tools[%d]", i)
		if t.Type != "" && t.Type != "custom" {
			if err := c.Refuse("tools.type", at+".type", "Gemini has no server tool "+t.Type, false); err != nil {
				return nil, err
			}
			continue
		}
		if t.Name == "" {
			return nil, invalid("tools.name", at+".name", "a tool needs its name")
		}
		if t.CacheControl != nil && !isNull(t.CacheControl) {
			if err := c.Refuse("tools.cache_control", at+".cache_control", "Gemini caches prompts by itself", true); err != nil {
				return nil, err
			}
		}
		d := gmFunctionDecl{Name: t.Name, Description: t.Description}
		if !isNull(t.InputSchema) {
			if bytes.TrimSpace(t.InputSchema)[0] != '{' {
				return nil, invalid("tools.input_schema", at+".input_schema", "input_schema must be an object")
			}
			d.ParametersJSONSchema = t.InputSchema
		}
		decls = append(decls, d)
	}
	if len(decls) == 0 {
		return nil, nil
	}
	return []gmTool{{FunctionDeclarations: decls}}, nil
}

func (c *reqConv) toolChoice(raw json.RawMessage) (*gmToolConfig, error) {
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := decode(raw, &tc, "tool_choice"); err != nil {
		return nil, err
	}
	if tc.DisableParallelToolUse {
		if err := c.Refuse("tool_choice.disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use", "Gemini cannot be kept to one function call at a time", true); err != nil {
			return nil, err
		}
	}
	fc := &gmFunctionCallingConfig{}
	switch tc.Type {
	case "auto":
		fc.Mode = "AUTO"
	case "any":
		fc.Mode = "ANY"
	case "none":
		fc.Mode = "NONE"
	case "tool":
		if tc.Name == "" {
			return nil, invalid("tool_choice.name", "tool_choice.name", "tool_choice of type tool needs the tool's name")
		}
		fc.Mode, fc.AllowedFunctionNames = "ANY", []string{tc.Name}
	default:
		return nil, invalid("tool_choice.type", "tool_choice.type", fmt.Sprintf("tool_choice type %q is not auto, any, tool or none", tc.Type))
	}
	return &gmToolConfig{FunctionCallingConfig: fc}, nil
}

func (c *reqConv) metadata(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := decode(raw, &m, "metadata"); err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		if isNull(m[k]) {
			continue
		}
		if err := c.Refuse("metadata."+k, "metadata."+k, "Gemini's requests carry no "+k, true); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (c *reqConv) outputConfig(raw json.RawMessage, gen *gmGenerationConf) error {
	var m map[string]json.RawMessage
	if err := decode(raw, &m, "output_config"); err != nil {
		return err
	}
	for _, k := range sortedKeys(m) {
		if isNull(m[k]) {
			continue
		}
		if k != "format" {
			if err := c.Refuse("output_config."+k, "output_config."+k, "Gemini has no counterpart for output_config."+k, false); err != nil {
				return err
			}
			continue
		}
		var f struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := decode(m[k], &f, "output_config.format"); err != nil {
			return err
		}
		if f.Type != "json_schema" {
			if err := c.Refuse("output_config.format", "output_config.format.type", fmt.Sprintf("Gemini has no output format %q", f.Type), false); err != nil {
				return err
			}
			continue
		}
		if isNull(f.Schema) || bytes.TrimSpace(f.Schema)[0] != '{' {
			return invalid("output_config.format.schema", "output_config.format.schema", "a json_schema format needs its schema, an object")
		}
		gen.ResponseMimeType = "application/json"
		gen.ResponseJSONSchema = f.Schema
	}
	return nil
}

func (c *reqConv) thinking(raw json.RawMessage, gen *gmGenerationConf) error {
	var t struct {
		Type         string `json:"type"`
		BudgetTokens *int64 `json:"budget_tokens"`
	}
	if err := decode(raw, &t, "thinking"); err != nil {
		return err
	}
	switch t.Type {
	case "enabled":
		if t.BudgetTokens == nil {
			return invalid("thinking.budget_tokens", "thinking.budget_tokens", "enabled thinking needs budget_tokens")
		}
		gen.ThinkingConfig = &gmThinking{ThinkingBudget: ptr(*t.BudgetTokens)}
	case "adaptive":
		gen.ThinkingConfig = &gmThinking{ThinkingBudget: ptr(int64(-1))} // Gemini's dynamic thinking
	case "disabled":
		// Left to the model: some Gemini models cannot stop thinking,
		// and refuse a zero budget.
	default:
		return invalid("thinking.type", "thinking.type", fmt.Sprintf("thinking type %q is not enabled, adaptive or disabled", t.Type))
	}
	return nil
}

func (g *gmGenerationConf) empty() bool {
	return g.MaxOutputTokens == nil && g.Temperature == nil && g.TopP == nil && g.TopK == nil &&
		g.StopSequences == nil && g.ResponseMimeType == "" && g.ResponseSchema == nil &&
		g.ResponseJSONSchema == nil && g.ThinkingConfig == nil
}

// skipSignature is Google's documented stand-in for a thoughtSignature
// that a replayed conversation lost: Gemini 3 refuses a model turn's
// function call without one, and the hub's tool_use blocks have no place
// to carry Gemini's own.
const skipSignature = "skip_thought_signature_validator"

// signCalls gives the first function call of each model turn the
// stand-in signature (Gemini signs only the first of parallel calls).
func signCalls(contents []gmContent) {
	for i := range contents {
		if contents[i].Role != "model" {
			continue
		}
		for j := range contents[i].Parts {
			if p := &contents[i].Parts[j]; p.FunctionCall != nil {
				if p.ThoughtSignature == "" {
					p.ThoughtSignature = skipSignature
				}
				break
			}
		}
	}
}
