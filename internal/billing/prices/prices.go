package prices

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"

	"genjobs/internal/billing"
	"genjobs/internal/catalog"
)

// defaultPrices is the price list of docs/api.md ("Prices") as configuration: an operator changes a
// price with an override, not a build.
//
//go:embed prices.json
var defaultPrices []byte

// maxJobPrice bounds every amount and every job's price, so that a typo in an
// override (a million per second) is an error rather than a wrapped int64.
const maxJobPrice = 1_000_000 * billing.USD

// List prices validated generation requests. Build it once at init; it
// is safe for concurrent use.
//
// The file it is read from is a JSON object keyed by endpoint path. Each entry:
//
//	"per":      "job", or an integer request field (e.g. "duration") the rate is multiplied by
//	"usd":      the rate per unit; may be left out when variants cover every request
//	            (a request no variant matches then has no price: an error, never free)
//	"variants": [{"when": {...}, "usd": "..."}]: the first whose when matches replaces usd
//	"extras":   [{"when": {...}, "usd": "..."}]: each that matches adds to the rate per unit
//	"steps":    {"of": [fields], "included": n, "every": n, "usd": "..."}: once per job,
//	            usd for every started "every" of the product of the fields beyond "included"
//	"note":     free text for the reader
//
// A when holds field tests that must all pass: a value tests equality, and
// {"non_empty": true} or {"non_empty": false} tests an array (absent is empty).
// Amounts are decimal strings (or JSON numbers) of USD with at most six
// decimals. Fields are checked against the endpoint's request schema at load.
type List struct {
	rules map[string]*rule
	// perUSD is the file's compute_units_per_usd: how many compute units a
	// job costs per USD of its price (billing.ToUnits).
	perUSD int64
	// defaults, when set, reads the embedded list on first use: a list
	// without overrides costs a cold start nothing (TestDefaultsRead
	// checks the file), one with overrides is read by Load, so that a bad
	// override stops the function's init.
	defaults *lazyDefaults
}

type lazyDefaults struct {
	once sync.Once
	err  error
}

type rule struct {
	per      string // a request field; "" prices per job
	usd      billing.Micros
	hasUSD   bool
	variants []priced
	extras   []priced
	steps    *steps
}

type priced struct {
	when []test
	usd  billing.Micros
	text string // the when in words, for Describe
}

type test func(params map[string]any) bool

type steps struct {
	of              []string
	included, every int64
	usd             billing.Micros
}

// Load returns the embedded default list with the entries of override
// (same JSON shape, any subset of paths) replacing the defaults' entries for
// those paths. An empty override is the defaults, read on first use. A
// malformed override, an unknown path or a bad rule is an error that names
// what is wrong.
func Load(override []byte) (*List, error) {
	if len(bytes.TrimSpace(override)) == 0 {
		return &List{defaults: &lazyDefaults{}}, nil
	}
	rules, perUSD, err := read(override)
	if err != nil {
		return nil, err
	}
	return &List{rules: rules, perUSD: perUSD}, nil
}

// read parses the embedded list with override's entries (and its
// compute_units_per_usd, when it has one) over it.
func read(override []byte) (map[string]*rule, int64, error) {
	fields, err := endpointFields()
	if err != nil {
		return nil, 0, fmt.Errorf("billing: %w", err)
	}
	rules, perUSD, err := parsePrices(defaultPrices, fields)
	if err != nil {
		return nil, 0, fmt.Errorf("billing: prices.json: %w", err)
	}
	if len(bytes.TrimSpace(override)) > 0 {
		over, overPerUSD, err := parsePrices(override, fields)
		if err != nil {
			return nil, 0, fmt.Errorf("billing: price override: %w", err)
		}
		maps.Copy(rules, over)
		perUSD = cmp.Or(overPerUSD, perUSD)
	}
	return rules, cmp.Or(perUSD, billing.DefaultUnitsPerUSD), nil
}

// table is the list's rules, reading the defaults on first use.
func (p *List) table() (map[string]*rule, error) {
	if d := p.defaults; d != nil {
		d.once.Do(func() { p.rules, p.perUSD, d.err = read(nil) })
		return p.rules, d.err
	}
	return p.rules, nil
}

// Check reads the list now if it has not been read: an error is a bug of
// the embedded file.
func (p *List) Check() error {
	_, err := p.table()
	return err
}

// Price is the price of one job of endpoint path with validated params
// (catalog.Request.Params: defaults filled, numbers json.Number, arrays
// []any). A path without a price is an error, so a new model can never run
// for free by accident.
func (p *List) Price(path string, params map[string]any) (billing.Micros, error) {
	rules, err := p.table()
	if err != nil {
		return 0, err
	}
	r, ok := rules[path]
	if !ok {
		return 0, fmt.Errorf("billing: no price for %s", path)
	}
	m, err := r.price(params)
	if err != nil {
		return 0, fmt.Errorf("billing: price of %s: %w", path, err)
	}
	return m, nil
}

// Units is the price in compute units of a job whose USD price is m:
// ceil(m x compute_units_per_usd) (docs/api.md, "Compute units").
func (p *List) Units(m billing.Micros) (billing.Units, error) {
	if _, err := p.table(); err != nil {
		return 0, err
	}
	return billing.ToUnits(m, p.perUSD), nil
}

// UnitsPerUSD is the list's compute_units_per_usd.
func (p *List) UnitsPerUSD() (int64, error) {
	_, err := p.table()
	return p.perUSD, err
}

// Paths lists the priced paths, sorted.
func (p *List) Paths() []string {
	rules, _ := p.table() // none if the defaults cannot be read (Check)
	return slices.Sorted(maps.Keys(rules))
}

// Describe is the price rule of endpoint path in words, from the list
// itself (overrides included), for readers that choose a model by its cost:
// "0.05 USD per second of duration", "0.02 USD per job, plus 0.01 USD for
// every started 16000000 of width x height beyond 16000000".
func (p *List) Describe(path string) (string, error) {
	rules, err := p.table()
	if err != nil {
		return "", err
	}
	r, ok := rules[path]
	if !ok {
		return "", fmt.Errorf("billing: no price for %s", path)
	}
	unit := " USD per job"
	if r.per != "" {
		unit = " USD per " + r.per + " unit"
		if r.per == "duration" {
			unit = " USD per second of duration"
		}
	}
	var parts []string
	for _, v := range r.variants {
		parts = append(parts, usdText(v.usd)+unit+" when "+v.text)
	}
	if r.hasUSD {
		base := usdText(r.usd) + unit
		if len(r.variants) > 0 {
			base += " otherwise"
		}
		parts = append(parts, base)
	}
	text := strings.Join(parts, "; ")
	for _, x := range r.extras {
		text += "; plus " + usdText(x.usd) + unit + " when " + x.text
	}
	if s := r.steps; s != nil {
		text += fmt.Sprintf("; plus %s USD for every started %d of %s beyond %d",
			usdText(s.usd), s.every, strings.Join(s.of, " x "), s.included)
	}
	return text, nil
}

// usdText is an amount without trailing zeros: 0.0645, 0.1, 2.
func usdText(m billing.Micros) string {
	s := strings.TrimRight(m.String(), "0")
	return strings.TrimSuffix(s, ".")
}

func (r *rule) price(params map[string]any) (billing.Micros, error) {
	rate, ok := r.usd, r.hasUSD
	for _, v := range r.variants {
		if v.matches(params) {
			rate, ok = v.usd, true
			break
		}
	}
	if !ok {
		return 0, errors.New("no variant matches the request and there is no base usd")
	}
	var err error
	for _, x := range r.extras {
		if x.matches(params) {
			if rate, err = plus(rate, x.usd); err != nil {
				return 0, err
			}
		}
	}
	units := int64(1)
	if r.per != "" {
		if units, err = count(params, r.per); err != nil {
			return 0, err
		}
	}
	total, err := times(rate, units)
	if err != nil || r.steps == nil {
		return total, err
	}
	s, err := r.steps.price(params)
	if err != nil {
		return 0, err
	}
	return plus(total, s)
}

func (s *steps) price(params map[string]any) (billing.Micros, error) {
	q := int64(1)
	for _, f := range s.of {
		n, err := count(params, f)
		if err != nil {
			return 0, err
		}
		if n != 0 && q > math.MaxInt64/n {
			return 0, fmt.Errorf("the product of %s is too large", strings.Join(s.of, " x "))
		}
		q *= n
	}
	if q <= s.included {
		return 0, nil
	}
	started := (q - s.included) / s.every
	if (q-s.included)%s.every != 0 {
		started++
	}
	return times(s.usd, started)
}

func (p priced) matches(params map[string]any) bool {
	for _, t := range p.when {
		if !t(params) {
			return false
		}
	}
	return true
}

// count reads a non-negative integer request field.
func count(params map[string]any, field string) (int64, error) {
	v, ok := params[field]
	if !ok {
		return 0, fmt.Errorf("%s is missing", field)
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s is %T, not json.Number", field, v)
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("%s is %s, not a count", field, n)
	}
	return i, nil
}

var errTooExpensive = fmt.Errorf("the price is above the cap of %d billing.USD per job", maxJobPrice/billing.USD)

// times and plus take amounts in 0..maxJobPrice and n >= 0, so checking
// against the cap also rules out overflow.
func times(m billing.Micros, n int64) (billing.Micros, error) {
	if n != 0 && int64(m) > int64(maxJobPrice)/n {
		return 0, errTooExpensive
	}
	return m * billing.Micros(n), nil
}

func plus(a, b billing.Micros) (billing.Micros, error) {
	if a+b > maxJobPrice {
		return 0, errTooExpensive
	}
	return a + b, nil
}

// schemaField is what a rule needs to know of a request field.
type schemaField struct {
	Type json.RawMessage `json:"type"`
	Enum []any           `json:"enum"`
}

func (f schemaField) is(typ string) bool {
	var one string
	if json.Unmarshal(f.Type, &one) == nil {
		return one == typ
	}
	var many []string
	_ = json.Unmarshal(f.Type, &many)
	return slices.Contains(many, typ)
}

// endpointFields maps each endpoint path to its request fields, so that a
// rule naming a field the request cannot have (a typo that would never match,
// silently dropping a surcharge) fails at load. A function rather than a
// package-level sync.OnceValues: a package variable's initializer is linked
// into every binary that imports the package, and with it the catalog.
func endpointFields() (map[string]map[string]schemaField, error) {
	fieldsOnce.Do(func() { fieldsByPath, fieldsErr = readEndpointFields() })
	return fieldsByPath, fieldsErr
}

var (
	fieldsOnce   sync.Once
	fieldsByPath map[string]map[string]schemaField
	fieldsErr    error
)

func readEndpointFields() (map[string]map[string]schemaField, error) {
	c, err := catalog.New()
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]schemaField{}
	for _, e := range c.Endpoints() {
		var s struct {
			Properties map[string]schemaField `json:"properties"`
		}
		dec := json.NewDecoder(bytes.NewReader(e.Source()))
		dec.UseNumber()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", e.Path(), err)
		}
		out[e.Path()] = s.Properties
	}
	return out, nil
}

// The file's shape, decoded strictly.
type (
	entryJSON struct {
		Note     string          `json:"note"`
		Per      string          `json:"per"`
		USD      json.RawMessage `json:"usd"`
		Variants []pricedJSON    `json:"variants"`
		Extras   []pricedJSON    `json:"extras"`
		Steps    *stepsJSON      `json:"steps"`
	}
	pricedJSON struct {
		When map[string]json.RawMessage `json:"when"`
		USD  json.RawMessage            `json:"usd"`
	}
	stepsJSON struct {
		Of       []string        `json:"of"`
		Included *json.Number    `json:"included"`
		Every    *json.Number    `json:"every"`
		USD      json.RawMessage `json:"usd"`
	}
	nonEmptyJSON struct {
		NonEmpty *bool `json:"non_empty"`
	}
)

// unitsKey is the file's one key that is not an endpoint path: how many
// compute units one USD of price costs.
const unitsKey = billing.UnitsPerUSDKey

// parsePrices reads a price file: its rules, and its compute_units_per_usd
// (0 when it has none).
func parsePrices(data []byte, fields map[string]map[string]schemaField) (map[string]*rule, int64, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return nil, 0, errors.New("must be a JSON object keyed by endpoint path")
	}
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(data, &entries); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, 0, fmt.Errorf("not valid JSON at byte %d: %w", syn.Offset, err)
		}
		return nil, 0, fmt.Errorf("not valid JSON: %w", err)
	}
	if err := noDuplicateKeys(data); err != nil {
		return nil, 0, err
	}
	var perUSD int64
	if raw, ok := entries[unitsKey]; ok {
		delete(entries, unitsKey)
		n, err := billing.ParseUnitsPerUSD(raw)
		if err != nil {
			return nil, 0, err
		}
		perUSD = n
	}
	rules := map[string]*rule{}
	for _, path := range slices.Sorted(maps.Keys(entries)) {
		props, ok := fields[path]
		if !ok {
			return nil, 0, fmt.Errorf("%s: not the path of a generation endpoint", path)
		}
		r, err := parseRule(entries[path], props)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		rules[path] = r
	}
	return rules, perUSD, nil
}

func parseRule(raw json.RawMessage, props map[string]schemaField) (*rule, error) {
	var e entryJSON
	if err := strictDecode(raw, &e); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("unknown key %s; an entry has note, per, usd, variants, extras, steps; "+
				"a variant or extra has when, usd; steps has of, included, every, usd", field)
		}
		return nil, err
	}
	r := &rule{}
	switch {
	case e.Per == "":
		return nil, errors.New(`per is missing: "job" or an integer field such as "duration"`)
	case e.Per != "job":
		if err := wantType(props, e.Per, "integer"); err != nil {
			return nil, fmt.Errorf("per: %w", err)
		}
		r.per = e.Per
	}
	if e.USD != nil {
		usd, err := amount(e.USD)
		if err != nil {
			return nil, fmt.Errorf("usd: %w", err)
		}
		r.usd, r.hasUSD = usd, true
	} else if len(e.Variants) == 0 {
		return nil, errors.New("usd is missing")
	}
	var err error
	if r.variants, err = parsePriced("variants", e.Variants, props); err != nil {
		return nil, err
	}
	if r.extras, err = parsePriced("extras", e.Extras, props); err != nil {
		return nil, err
	}
	if e.Steps != nil {
		if r.steps, err = parseSteps(e.Steps, props); err != nil {
			return nil, fmt.Errorf("steps: %w", err)
		}
	}
	return r, nil
}

func parsePriced(name string, list []pricedJSON, props map[string]schemaField) ([]priced, error) {
	var out []priced
	for i, pj := range list {
		at := fmt.Sprintf("%s[%d]", name, i)
		if len(pj.When) == 0 {
			return nil, fmt.Errorf("%s: when is missing or empty", at)
		}
		if pj.USD == nil {
			return nil, fmt.Errorf("%s: usd is missing", at)
		}
		usd, err := amount(pj.USD)
		if err != nil {
			return nil, fmt.Errorf("%s.usd: %w", at, err)
		}
		p := priced{usd: usd}
		var words []string
		for _, field := range slices.Sorted(maps.Keys(pj.When)) {
			t, err := parseTest(field, pj.When[field], props)
			if err != nil {
				return nil, fmt.Errorf("%s.when.%s: %w", at, field, err)
			}
			p.when = append(p.when, t)
			words = append(words, testText(field, pj.When[field]))
		}
		p.text = strings.Join(words, " and ")
		out = append(out, p)
	}
	return out, nil
}

func parseTest(field string, raw json.RawMessage, props map[string]schemaField) (test, error) {
	f, ok := props[field]
	if !ok {
		return nil, errors.New("not a field of this endpoint")
	}
	if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		var ne nonEmptyJSON
		if err := strictDecode(raw, &ne); err != nil || ne.NonEmpty == nil {
			return nil, errors.New(`want {"non_empty": true} or {"non_empty": false}`)
		}
		if !f.is("array") {
			return nil, errors.New("non_empty tests an array field")
		}
		want := *ne.NonEmpty
		return func(params map[string]any) bool {
			a, _ := params[field].([]any)
			return (len(a) > 0) == want
		}, nil
	}
	var v any
	if err := strictDecode(raw, &v); err != nil {
		return nil, err
	}
	if len(f.Enum) > 0 && !slices.ContainsFunc(f.Enum, func(e any) bool { return equal(e, v) }) {
		return nil, fmt.Errorf("%s is not one of the field's values %s", raw, enumText(f.Enum))
	}
	switch v := v.(type) {
	case string:
		if !f.is("string") {
			return nil, fmt.Errorf("%s is a string; the field is not", raw)
		}
	case bool:
		if !f.is("boolean") {
			return nil, fmt.Errorf("%s is a boolean; the field is not", raw)
		}
	case json.Number:
		// math/big would spend seconds on 1e999999; no field needs an exponent.
		if strings.ContainsAny(v.String(), "eE") {
			return nil, fmt.Errorf("write %s without an exponent", raw)
		}
		r, _ := new(big.Rat).SetString(v.String())
		if !f.is("number") && !(f.is("integer") && r.IsInt()) {
			return nil, fmt.Errorf("%s is not a value of the field's type", raw)
		}
	default:
		return nil, fmt.Errorf(`want a value to equal or {"non_empty": ...}, not %s`, raw)
	}
	return func(params map[string]any) bool { return equal(params[field], v) }, nil
}

// testText is a when's field test in words (parseTest accepted it):
// "resolution is 480p", "reference_videos is non-empty".
func testText(field string, raw json.RawMessage) string {
	var ne nonEmptyJSON
	if strictDecode(raw, &ne) == nil && ne.NonEmpty != nil {
		if *ne.NonEmpty {
			return field + " is non-empty"
		}
		return field + " is empty or absent"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return field + " is " + s
	}
	return field + " is " + string(bytes.TrimSpace(raw))
}

// equal compares a request value with a rule's value; numbers by value, as a
// rule may write 5.0 for the request's canonical 5.
func equal(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		ar, aok := new(big.Rat).SetString(an.String())
		br, bok := new(big.Rat).SetString(bn.String())
		return aok && bok && ar.Cmp(br) == 0
	}
	switch a.(type) {
	case string, bool:
		return a == b
	}
	return false
}

func enumText(enum []any) string {
	var parts []string
	for _, e := range enum {
		b, _ := json.Marshal(e)
		parts = append(parts, string(b))
	}
	return strings.Join(parts, ", ")
}

func parseSteps(sj *stepsJSON, props map[string]schemaField) (*steps, error) {
	if len(sj.Of) == 0 {
		return nil, errors.New("of is missing: the integer fields whose product is counted")
	}
	for _, f := range sj.Of {
		if err := wantType(props, f, "integer"); err != nil {
			return nil, fmt.Errorf("of: %w", err)
		}
	}
	s := &steps{of: sj.Of}
	var err error
	if s.included, err = whole("included", sj.Included, 0); err != nil {
		return nil, err
	}
	if s.every, err = whole("every", sj.Every, 1); err != nil {
		return nil, err
	}
	if sj.USD == nil {
		return nil, errors.New("usd is missing")
	}
	if s.usd, err = amount(sj.USD); err != nil {
		return nil, fmt.Errorf("usd: %w", err)
	}
	return s, nil
}

func whole(name string, n *json.Number, least int64) (int64, error) {
	if n == nil {
		return 0, fmt.Errorf("%s is missing", name)
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || i < least {
		return 0, fmt.Errorf("%s is %s; want a whole number of at least %d", name, n, least)
	}
	return i, nil
}

func wantType(props map[string]schemaField, field, typ string) error {
	f, ok := props[field]
	switch {
	case !ok:
		return fmt.Errorf("%q is not a field of this endpoint", field)
	case !f.is(typ):
		return fmt.Errorf("%q is not an %s field", field, typ)
	}
	return nil
}

// amount reads a USD amount written as a decimal string or a JSON number; the
// number's own text is parsed, never a float.
func amount(raw json.RawMessage) (billing.Micros, error) {
	text := string(bytes.TrimSpace(raw))
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(raw, &text); err != nil {
			return 0, err
		}
	}
	m, err := billing.ParseUSD(text)
	switch {
	case err != nil:
		return 0, err
	case m < 0:
		return 0, fmt.Errorf("%s is negative", text)
	case m > maxJobPrice:
		return 0, fmt.Errorf("%s is above the cap of %d billing.USD per job", text, maxJobPrice/billing.USD)
	}
	return m, nil
}

// strictDecode decodes one JSON value, refusing unknown keys and keeping
// numbers as text.
func strictDecode(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

// noDuplicateKeys refuses a key given twice in any object of data, which
// encoding/json would resolve silently by keeping the last: an operator's
// second entry for a path must not hide the first. data is valid JSON.
func noDuplicateKeys(data []byte) error {
	type frame struct {
		keys    map[string]bool // nil in an array
		key     string
		wantKey bool
	}
	var stack []*frame
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].wantKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a float64 would refuse 1e999 before the rule could name it
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			top := stack[n-1]
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			k := tok.(string) // the decoder yields only string keys in an object
			if top.keys[k] {
				where := "the top level"
				var keys []string
				for _, f := range stack[:n-1] {
					if f.keys != nil {
						keys = append(keys, f.key)
					}
				}
				if len(keys) > 0 {
					where = strings.Join(keys, " > ")
				}
				return fmt.Errorf("%s: key %q is given twice", where, k)
			}
			top.keys[k], top.key, top.wantKey = true, k, false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}
