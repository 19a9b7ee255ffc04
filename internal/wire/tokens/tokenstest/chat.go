// Package tokenstest makes request bodies of English prose, the same on
// every run, for the benchmarks that set the cost of counting a
// request's tokens beside the cost of the rest of the request (in
// packages tokens and gateway).
package tokenstest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
)

// vocabulary is plain English of the kind a prompt is written in: the
// words, not their frequencies, decide how a BPE splits the text.
var vocabulary = strings.Fields(`
the of and to a in is it you that he was for on are with as they be at
one have this from or had by word but what some we can out other were all
there when up use your how said an each she which do their time if will
way about many then them write would like so these her long make thing see
him two has look more day could go come did number sound no most people my
over know water than call first who may down side been now find any new
work part take get place made live where after back little only round man
year came show every good me give our under name very through just form
sentence great think say help low line differ turn cause much mean before
move right boy old too same tell does set three want air well also play
small end put home read hand port large spell add even land here must big
high such follow act why ask men change went light kind off need house
picture try us again animal point mother world near build self earth
father head stand own page should country found answer school grow study
still learn plant cover food sun four between state keep eye never last
let thought city tree cross farm hard start might story saw far sea draw
left late run while press close night real life few north open seem
together next white children begin got walk example ease paper group
always music those both mark often letter until mile river car feet care
second book carry took science eat room friend began idea fish mountain
stop once base hear horse cut sure watch color face wood main enough
plain girl usual young ready above ever red list though feel talk bird
soon body dog family direct pose leave song measure door product black
short numeral class wind question happen complete ship area half rock
order fire south problem piece told knew pass since top whole king space
heard best hour better during hundred five remember step early hold west
ground interest reach fast verb sing listen six table travel less morning
ten simple several vowel toward war lay against pattern slow center love
person money serve appear road map rain rule govern pull cold notice voice
unit power town fine certain fly fall lead cry dark machine note wait plan
figure star box noun field rest correct able pound done beauty drive stood
contain front teach week final gave green quick develop ocean warm free
minute strong special mind behind clear tail produce fact street inch
multiply nothing course stay wheel full force blue object decide surface
deep moon island foot system busy test record boat common gold possible
plane instead dry wonder laugh thousand ago ran check game shape equate
miss brought heat snow tire bring yes distant fill east paint language
among request provider latency budget deploy service customer report
`)

// Prose returns about words words of English sentences and paragraphs,
// the same for the same seed.
func Prose(seed uint64, words int) string {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	var b strings.Builder
	for n := 0; n < words; {
		length := 5 + r.IntN(16)
		for j := 0; j < length && n < words; j++ {
			w := vocabulary[r.IntN(len(vocabulary))]
			if j == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
			}
			b.WriteString(w)
			if j > 0 && j < length-2 && r.IntN(10) == 0 {
				b.WriteByte(',')
			}
			n++
		}
		switch r.IntN(12) {
		case 0:
			b.WriteString("?")
		default:
			b.WriteString(".")
		}
		if r.IntN(5) == 0 {
			b.WriteString("\n\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// Chat is an OpenAI chat completions body of about 2,000 tokens (counted
// in o200k_base and cl100k_base alike): a system message and three user
// turns with the two assistant answers between them, in prose with
// paragraph breaks, as a conversation's fourth request would carry it.
// Each message begins with a serial number that Stamp rewrites.
type Chat struct {
	Body    []byte
	serials []int // where each message's serial digits start in Body
}

const serialDigits = 8

// NewChat returns the conversation for seed, addressed to model.
func NewChat(model string, seed uint64) *Chat {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	turns := []struct {
		role  string
		words int
	}{
		{"system", 160}, {"user", 330}, {"assistant", 380},
		{"user", 220}, {"assistant", 360}, {"user", 200},
	}
	var msgs []message
	for i, t := range turns {
		text := "[" + strings.Repeat("0", serialDigits) + "] " + Prose(seed*16+uint64(i), t.words)
		msgs = append(msgs, message{t.role, text})
	}
	body, err := json.Marshal(struct {
		Model       string    `json:"model"`
		Messages    []message `json:"messages"`
		Temperature float64   `json:"temperature"`
	}{model, msgs, 0.25})
	if err != nil {
		panic(err)
	}
	c := &Chat{Body: body}
	mark := []byte(`"[` + strings.Repeat("0", serialDigits) + `]`)
	for off := 0; ; {
		i := bytes.Index(body[off:], mark)
		if i < 0 {
			break
		}
		c.serials = append(c.serials, off+i+2)
		off += i + len(mark)
	}
	return c
}

// Stamp writes n (mod 10^8) into every message's serial number, in
// place: each message becomes text no cache has seen, while the body
// keeps its length and, since every run of three digits is one token in
// both encodings, its token count.
func (c *Chat) Stamp(n uint64) { c.stamp(n, c.serials) }

// StampLast writes n (mod 10^8) into the last message's serial number
// only: the body becomes the same conversation with a new last message,
// as a client's next turn sends it, the earlier messages unchanged.
func (c *Chat) StampLast(n uint64) { c.stamp(n, c.serials[len(c.serials)-1:]) }

func (c *Chat) stamp(n uint64, serials []int) {
	var digits [serialDigits]byte
	s := strconv.AppendUint(digits[:0], n%100000000, 10)
	k := copy(digits[serialDigits-len(s):], s)
	for i := range serialDigits - k {
		digits[i] = '0'
	}
	for _, off := range serials {
		copy(c.Body[off:], digits[:])
	}
}
