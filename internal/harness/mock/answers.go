package mock

import (
	"encoding/json"
	"math/rand/v2"
	"strings"

	"github.com/sluice-gw/sluice/internal/model/upstream"
)

// answers picks the reply for a call's prompt text: nil for a prompt no
// Answer matches (the reply is then pseudo-latin words). Right or wrong
// is drawn from its own source, seeded by Config.Seed, so scripting
// answers changes no other draw.
type answers struct {
	list    []Answer
	quality float64
	rng     *rand.Rand // guarded by Server.rngMu
}

func newAnswers(c Config) *answers {
	if len(c.Answers) == 0 {
		return nil
	}
	return &answers{list: c.Answers, quality: c.QualityOf(), rng: rand.New(rand.NewPCG(c.Seed, c.Seed^0xa5e7))}
}

// reply returns the words of the scripted reply to prompt, each with a
// leading space as generated words have, or nil.
func (a *answers) reply(prompt string) []string {
	if a == nil {
		return nil
	}
	for _, x := range a.list {
		if x.Match == "" || !strings.Contains(prompt, x.Match) {
			continue
		}
		text := x.Reply
		if a.quality < 1 && a.rng.Float64() >= a.quality {
			text = x.Wrong
			if text == "" {
				text = upstream.DefaultWrong
			}
		}
		var out []string
		for i, w := range strings.Fields(text) {
			if i > 0 {
				w = " " + w
			}
			out = append(out, w)
		}
		if len(out) == 0 {
			out = []string{""}
		}
		return out
	}
	return nil
}

// promptText is the text of a chat request's messages and system prompt,
// for matching Answers.
func promptText(body []byte) string {
	var q struct {
		Messages []message       `json:"messages"`
		System   json.RawMessage `json:"system"`
	}
	if json.Unmarshal(body, &q) != nil {
		return ""
	}
	return promptOf(q.System, q.Messages)
}
