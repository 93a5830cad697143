package console

import (
	"errors"
	"net/http"
	"strings"

	"genjobs/internal/console/pages"
	"genjobs/internal/store"
	"genjobs/internal/style"
)

// sharedStyle is the page a style's share link opens, without sign-in.
func (c *Console) sharedStyle(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	if token == "" || len(token) > 128 {
		c.fail(w, r, http.StatusNotFound, "This share link does not lead to a style.")
		return
	}
	st, err := c.Styles.SharedStyle(r.Context(), token)
	if errors.Is(err, style.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "This share link does not lead to a style.")
		return
	}
	if err != nil {
		c.internalError(w, r, "read shared style", err)
		return
	}
	cover := ""
	for _, u := range st.URLs {
		if strings.HasPrefix(u, "https://") {
			cover = u
			break
		}
	}
	c.show(w, r, http.StatusOK, &view{Title: st.Title}, pages.Shared(st, cover))
}
