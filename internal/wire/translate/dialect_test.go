package translate

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/wire/protocol"
)

func TestDialectDispatch(t *testing.T) {
	oa, an := protocol.OpenAI, protocol.Anthropic
	body := []byte(openAIWith(""))
	if tr, err := Request(oa, oa, body, Options{}); err != nil || string(tr.Body) != string(body) {
		t.Errorf("same dialect: %v %s", err, tr.Body)
	}
	if _, err := Request(oa, an, body, Options{}); err != nil {
		t.Errorf("openai → anthropic: %v", err)
	}
	if _, err := Request(an, oa, body, Options{}); err == nil {
		t.Errorf("an OpenAI body read as Anthropic's should be refused (no max_tokens)")
	}
	if out, err := Response(an, an, []byte("x"), 0); err != nil || string(out) != "x" {
		t.Errorf("same dialect response changed")
	}
	if NewStream(oa, oa, StreamConfig{}) != nil {
		t.Errorf("same dialect stream should need no translator")
	}
	if _, ok := NewStream(an, oa, StreamConfig{}).(*StreamToOpenAI); !ok {
		t.Errorf("anthropic → openai stream")
	}
	if _, ok := NewStream(oa, an, StreamConfig{}).(*StreamToAnthropic); !ok {
		t.Errorf("openai → anthropic stream")
	}
}
