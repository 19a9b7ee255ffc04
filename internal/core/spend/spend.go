// Package spend decides what a key or a team may still spend, in
// dollars, over a calendar day, a calendar month or a rolling window.
//
// Goals: a spend limit holds across a fleet and across restarts; a
// request is refused, before any upstream call, only when a limit is
// already spent; and the refusal says which limit, how much is spent,
// and when it resets.
//
// The rules, all here, all pure (the host passes in now and the time
// zone, and carries out the counting in its store):
//
//   - Windows. A daily limit counts from midnight to midnight in the
//     configured time zone (a day of 23 or 25 hours across a DST change),
//     a monthly one from the first of the month. A rolling window of
//     span S is kept in Sub sub-buckets of S/Sub each; a spend counts
//     while its sub-bucket is one of the last Sub+1 (the current one
//     included), so it is remembered for at least S and at most S+S/Sub:
//     the window never forgets a spend early, and may remember it up to
//     one sub-bucket longer.
//   - Admission. A request first reserves its maximum cost (MaxCost) in
//     the current bucket of every limit of its key and its team. It is
//     admitted when, for every limit, what is spent and reserved before
//     it is below the limit (Fits); the reservation is then added
//     whatever its size. So spend passes a limit by at most one
//     request's reserved maximum, and a key under its limit is never
//     refused, however large the request.
//   - Settlement. When a call ends, its reservation is replaced by what
//     it cost (price.Cost of the provider's usage): the store adds
//     actual - reserved to the buckets the reservation went to.
//   - Soft limits. Once spend reaches Soft of a limit (default 0.8),
//     answers carry a warning (Warning).
package spend

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sluice-gw/sluice/internal/core/price"
)

// Window is what a limit counts over.
type Window int

const (
	// Daily is a calendar day in the configured time zone.
	Daily Window = iota
	// Monthly is a calendar month in the configured time zone.
	Monthly
	// Rolling is the last Span, kept in Sub sub-buckets.
	Rolling
)

// Sub is how many sub-buckets a rolling window is kept in.
const Sub = 24

// DefaultSoft is the share of a limit at which warnings start.
const DefaultSoft = 0.8

// DefaultMaxOutput is the output a request that names no max_tokens
// reserves, when its model configures no default_max_tokens: a long
// answer's worth. It bounds only the reservation (and so how far a
// limit can be passed); the request is charged what it used.
const DefaultMaxOutput = 4096

// Limit is one spend limit of a key or a team.
type Limit struct {
	// Scope is "key" or "team"; Name the key's or team's name.
	Scope, Name string
	Window      Window
	// Span is a rolling window's length (Rolling only).
	Span time.Duration
	// Amount is the limit, above zero.
	Amount price.Micros
	// Soft is the share of Amount at which warnings start (0: DefaultSoft).
	Soft float64
}

// WindowName names the window in metrics and messages: daily, monthly,
// or rolling_<span> (e.g. rolling_1h0m0s).
func (l Limit) WindowName() string {
	switch l.Window {
	case Daily:
		return "daily"
	case Monthly:
		return "monthly"
	}
	return "rolling_" + l.Span.String()
}

// String names the limit as a message does: key search's daily limit.
func (l Limit) String() string {
	w := l.WindowName()
	if l.Window == Rolling {
		w = "rolling " + l.Span.String()
	}
	return l.Scope + " " + strconv.Quote(l.Name) + "'s " + w + " spend limit"
}

func (l Limit) soft() float64 {
	if l.Soft <= 0 || l.Soft > 1 {
		return DefaultSoft
	}
	return l.Soft
}

// Bucket is one counter in the store.
type Bucket struct {
	// ID names the counter: scope, name, window and which one, e.g.
	// key:search:d:2026-12-03, team:t:m:2026-12, key:k:r3600:493921.
	ID string
	// Expires is when the store may forget it: once it can no longer be
	// counted (a calendar window's end, a sub-bucket's last day in the
	// window), plus a day's grace for settlements that come late.
	Expires time.Time
}

// Grace is how long a bucket outlives its window, so a settlement that
// arrives after the window ended still finds the counter it corrects.
const Grace = 24 * time.Hour

// Need is one limit as it stands at a moment: the bucket a reservation
// goes to, and the buckets whose sum is the limit's spend.
type Need struct {
	Limit Limit
	// Reserve is the current bucket, where a reservation goes.
	Reserve Bucket
	// Count are the buckets summed, oldest first; the last is Reserve.
	Count []Bucket
	// Ends is when Reserve stops being the current bucket.
	Ends time.Time
	// width is a rolling sub-bucket's length.
	width time.Duration
}

// Plan is what every limit needs at now, in time zone loc (nil: UTC).
func Plan(limits []Limit, now time.Time, loc *time.Location) []Need {
	if loc == nil {
		loc = time.UTC
	}
	out := make([]Need, 0, len(limits))
	for _, l := range limits {
		out = append(out, plan(l, now, loc))
	}
	return out
}

func plan(l Limit, now time.Time, loc *time.Location) Need {
	prefix := l.Scope + ":" + l.Name + ":"
	t := now.In(loc)
	switch l.Window {
	case Daily:
		start := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
		end := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		b := Bucket{ID: prefix + "d:" + start.Format("2006-01-02"), Expires: end.Add(Grace)}
		return Need{Limit: l, Reserve: b, Count: []Bucket{b}, Ends: end}
	case Monthly:
		start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
		end := time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		b := Bucket{ID: prefix + "m:" + start.Format("2006-01"), Expires: end.Add(Grace)}
		return Need{Limit: l, Reserve: b, Count: []Bucket{b}, Ends: end}
	}
	width := max(l.Span/Sub, time.Second)
	cur := now.UnixNano() / int64(width)
	tag := prefix + "r" + strconv.FormatInt(int64(l.Span/time.Second), 10) + ":"
	n := Need{Limit: l, width: width, Ends: time.Unix(0, (cur+1)*int64(width)).UTC()}
	for i := cur - Sub; i <= cur; i++ {
		// Sub-bucket i is counted until i+Sub is current, so it ends
		// Sub+1 widths after it began.
		exp := time.Unix(0, (i+Sub+1)*int64(width)).UTC().Add(Grace)
		n.Count = append(n.Count, Bucket{ID: tag + strconv.FormatInt(i, 10), Expires: exp})
	}
	n.Reserve = n.Count[len(n.Count)-1]
	return n
}

// Fits is the admission rule: a limit admits while what is spent and
// reserved of it is below its amount. The store applies the same
// comparison atomically with the reservation.
func Fits(total, limit price.Micros) bool { return total < limit }

// Refusal says why a request was refused: the limit, what is spent of
// it (in-flight reservations included) and when it resets.
type Refusal struct {
	Limit Limit
	Spent price.Micros
	// Reset is when the window's spend falls below the limit: a
	// calendar window's end; for a rolling window, when enough of its
	// oldest sub-buckets have left it.
	Reset time.Time
}

// RetryAfter is how long from now until the reset, at least a second.
func (r Refusal) RetryAfter(now time.Time) time.Duration {
	return max(r.Reset.Sub(now), time.Second)
}

// Message is the refusal as the client reads it.
func (r Refusal) Message(loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return fmt.Sprintf("%s is reached: %s of %s spent; it resets at %s. Ask the gateway's operator to raise the limit, or retry after the reset",
		r.Limit, Dollars(r.Spent), Dollars(r.Limit.Amount), r.Reset.In(loc).Format(time.RFC3339))
}

// Dollars writes an amount as $12.34, or to the micro-dollar below a cent.
func Dollars(m price.Micros) string {
	if m%10000 == 0 || m >= 1e6 || m <= -1e6 {
		return fmt.Sprintf("$%.2f", m.Dollars())
	}
	return fmt.Sprintf("$%.6f", m.Dollars())
}

// Totals are, per need, the amounts in its Count buckets, as the store
// read them.
type Totals [][]price.Micros

// Sum is need i's spend.
func (t Totals) Sum(i int) price.Micros {
	var s price.Micros
	for _, v := range t[i] {
		s += v
	}
	return s
}

// Decide applies Fits to every need: nil when all admit, else the
// refusal of the first that does not.
func Decide(needs []Need, totals Totals) *Refusal {
	for i, n := range needs {
		if s := totals.Sum(i); !Fits(s, n.Limit.Amount) {
			return &Refusal{Limit: n.Limit, Spent: s, Reset: reset(n, totals[i])}
		}
	}
	return nil
}

// reset is when need n's spend falls below its limit with nothing more
// spent: a calendar window's end; for a rolling window, the time its
// oldest sub-buckets have left the window, one by one, until the rest
// is below the limit (never, if the current one alone is not: then
// the current one's departure).
func reset(n Need, amounts []price.Micros) time.Time {
	if n.Limit.Window != Rolling {
		return n.Ends
	}
	var total price.Micros
	for _, v := range amounts {
		total += v
	}
	// Count[0] leaves when the current bucket ends; Count[i], i widths later.
	for i, v := range amounts {
		total -= v
		if Fits(total, n.Limit.Amount) {
			return n.Ends.Add(time.Duration(i) * n.width)
		}
	}
	return n.Ends.Add(time.Duration(len(amounts)-1) * n.width)
}

// Warning is a limit whose soft threshold is passed.
type Warning struct {
	Limit Limit
	// Share is spend over the limit (0.85: 85 %).
	Share float64
}

// Header is the warning as X-Sluice-Spend-Warning carries it:
// scope=key; name="k"; window=daily; spent=0.85.
func (w Warning) Header() string {
	return fmt.Sprintf("scope=%s; name=%s; window=%s; spent=%.2f", w.Limit.Scope, strconv.Quote(w.Limit.Name), w.Limit.WindowName(), w.Share)
}

// Warn is the most spent of the needs whose soft threshold totals pass,
// or false.
func Warn(needs []Need, totals Totals) (Warning, bool) {
	var best Warning
	found := false
	for i, n := range needs {
		share := float64(totals.Sum(i)) / float64(n.Limit.Amount)
		if share >= n.Limit.soft() && (!found || share > best.Share) {
			best, found = Warning{Limit: n.Limit, Share: share}, true
		}
	}
	return best, found
}

// Request is what a request may cost at most: its input tokens and the
// output it may generate.
type Request struct {
	// Input is the counted input tokens.
	Input int64
	// Choices is n, or best_of where the API has it: how many answers
	// are generated (at least 1).
	Choices int64
	// MaxOutput is max_tokens, 0 when the request named none, or
	// negative for an endpoint that generates no output.
	MaxOutput int64
	// DefaultOutput is the model's configured default_max_tokens, used
	// when MaxOutput is 0 (0: DefaultMaxOutput).
	DefaultOutput int64
}

// Output is the output tokens the request may generate per answer.
func (r Request) Output() int64 {
	switch {
	case r.MaxOutput < 0:
		return 0 // an endpoint that generates nothing (embeddings)
	case r.MaxOutput > 0:
		return r.MaxOutput
	case r.DefaultOutput > 0:
		return r.DefaultOutput
	}
	return DefaultMaxOutput
}

// MaxCost is the most r can cost on any of the targets priced by
// prices: its input at the target's input price, and Choices answers
// of Output tokens each at its output price, on whichever target that
// makes dearest.
func MaxCost(r Request, prices []price.Price) price.Micros {
	n := max(r.Choices, 1)
	var most price.Micros
	for _, p := range prices {
		most = max(most, p.Cost(price.Usage{Input: r.Input, Output: n * r.Output()}))
	}
	return most
}
