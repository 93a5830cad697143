package console

import (
	"errors"
	"net/http"
	"strings"

	"genjobs/internal/store"
	"genjobs/internal/style"
)

type sharedData struct {
	Style style.Style
	Cover string
}

// sharedStyle is the page a style's share link opens, without sign-in.
func (c *Console) sharedStyle(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	if token == "" || len(token) > 128 {
		c.fail(w, r, http.StatusNotFound, "This share link does not lead to a style.")
		return
	}
	st, err := c.Store.SharedStyle(r.Context(), token)
	if errors.Is(err, style.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "This share link does not lead to a style.")
		return
	}
	if err != nil {
		c.internalError(w, r, "read shared style", err)
		return
	}
	data := sharedData{Style: st}
	for _, u := range st.URLs {
		if strings.HasPrefix(u, "https://") {
			data.Cover = u
			break
		}
	}
	c.render(w, r, http.StatusOK, "shared", &view{Title: st.Title, Data: data})
}
