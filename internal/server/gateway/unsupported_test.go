package gateway

import (
	"testing"

	"github.com/sluice-gw/sluice/internal/config"
	"github.com/sluice-gw/sluice/internal/wire/translate"
)

// on_unsupported is parsed once, at New: a model's for this package's
// translation, a provider's for the native codecs that reach it.
func TestOnUnsupportedParsed(t *testing.T) {
	cfg := config.Default("http://127.0.0.1:1")
	cfg.Providers[0].OnUnsupported = "refuse"
	cfg.Models[0].OnUnsupported = "drop"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got := g.byScope[0].unsupported; got != translate.UnsupportedRefuse {
		t.Errorf("providers[0] unsupported = %v, want refuse", got)
	}
	if got := g.byScope[1].unsupported; got != translate.UnsupportedDefault {
		t.Errorf("providers[1] unsupported = %v, want the default", got)
	}
	models := map[string]translate.Unsupported{}
	for _, m := range g.models {
		models[m.name] = m.unsupported
	}
	if got := models[cfg.Models[0].Name]; got != translate.UnsupportedDrop {
		t.Errorf("models[0] unsupported = %v, want drop", got)
	}
	if got := models[cfg.Models[1].Name]; got != translate.UnsupportedDefault {
		t.Errorf("models[1] unsupported = %v, want the default", got)
	}
}
