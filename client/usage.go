package client

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"
)

// Usage is what completed jobs cost over a number of days. Amounts are
// decimal strings of USD with six decimals ("0.300000"): money is never a
// float.
type Usage struct {
	From     time.Time    `json:"from"`
	To       time.Time    `json:"to"`
	TotalUSD string       `json:"total_usd"`
	ByDay    []UsageDay   `json:"by_day"`
	ByModel  []UsageModel `json:"by_model"`

	raw json.RawMessage
}

// UsageDay is one day of Usage.
type UsageDay struct {
	Date string `json:"date"`
	USD  string `json:"usd"`
	Jobs int    `json:"jobs"`
}

// UsageModel is one endpoint's part of Usage.
type UsageModel struct {
	Path string `json:"path"`
	USD  string `json:"usd"`
	Jobs int    `json:"jobs"`
}

// RawJSON is the answer exactly as the API sent it.
func (u *Usage) RawJSON() json.RawMessage { return u.raw }

// Usage reads the billed usage of the last days (1..90; 0 means the API's
// default, 7).
func (c *Client) Usage(ctx context.Context, days int) (*Usage, error) {
	q := url.Values{}
	if days != 0 {
		q.Set("days", strconv.Itoa(days))
	}
	resp, err := c.do(ctx, request{method: "GET", path: "/usage", query: q})
	if err != nil {
		return nil, err
	}
	var u Usage
	if err := decode(resp, &u); err != nil {
		return nil, err
	}
	u.raw = resp.body
	return &u, nil
}
