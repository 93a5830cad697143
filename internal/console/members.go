package console

import (
	"errors"
	"net/http"

	"genjobs/internal/console/pages"
	"genjobs/internal/member"
	"genjobs/internal/store"
)

func (c *Console) membersData(r *http.Request, req *request) (pages.MembersData, error) {
	ms, err := c.Members.Members(r.Context(), req.current.WorkspaceID)
	return pages.MembersData{Acting: req.acting(), Members: ms, CanManage: req.current.Role.ManagesMembers(), Self: req.session.UserID}, err
}

func (c *Console) membersPage(w http.ResponseWriter, r *http.Request, req *request) {
	data, err := c.membersData(r, req)
	if err != nil {
		c.internalError(w, r, "read members", err)
		return
	}
	v := c.view(req, "members", "Members")
	v.Notice = notices[r.URL.Query().Get("done")]
	c.show(w, r, http.StatusOK, v, pages.Members(data))
}

func (c *Console) membersError(w http.ResponseWriter, r *http.Request, req *request, status int, email, role, msg string) {
	data, err := c.membersData(r, req)
	if err != nil {
		c.internalError(w, r, "read members", err)
		return
	}
	data.Email, data.Role, data.EmailError = email, role, msg
	c.show(w, r, status, c.view(req, "members", "Members"), pages.Members(data))
}

func (c *Console) addMember(w http.ResponseWriter, r *http.Request, req *request) {
	email := member.NormalizeEmail(r.PostForm.Get("email"))
	roleText := r.PostForm.Get("role")
	role, err := member.ParseRole(roleText)
	if err != nil {
		c.membersError(w, r, req, http.StatusBadRequest, email, roleText, "Choose owner, admin or member.")
		return
	}
	if err := member.ValidEmail(email); err != nil {
		c.membersError(w, r, req, http.StatusBadRequest, email, roleText, "Enter the person's email address.")
		return
	}
	u, _, err := c.Identity.EnsureUser(r.Context(), email)
	if err == nil {
		err = c.adopt(r.Context(), req.current.WorkspaceID, email, u.UserID)
	}
	if err != nil {
		if !refuse(w, err, func(status int, msg string, _ bool) { c.membersError(w, r, req, status, email, roleText, msg) }) {
			c.internalError(w, r, "create user", err)
		}
		return
	}
	err = c.Members.AddMember(r.Context(), member.Membership{WorkspaceID: req.current.WorkspaceID, UserID: u.UserID,
		Email: email, Role: role, AddedAt: c.Clock.Now()})
	if errors.Is(err, store.ErrExists) {
		c.membersError(w, r, req, http.StatusConflict, email, roleText, email+" is a member already: change their role in the list.")
		return
	}
	if err != nil {
		c.internalError(w, r, "add member", err)
		return
	}
	c.logger(r).Info("member added", "workspace_id", req.current.WorkspaceID, "user_id", u.UserID, "role", role, "by", req.session.UserID)
	data, err := c.membersData(r, req)
	if err != nil {
		c.internalError(w, r, "read members", err)
		return
	}
	// A temporary password comes with a user the pool made now, or one
	// that never signed in (an add that failed half-way lost the first).
	data.Added = &pages.Added{Email: email, Role: string(role), TemporaryPassword: u.TemporaryPassword}
	c.show(w, r, http.StatusCreated, c.view(req, "members", "Members"), pages.Members(data))
}

func (c *Console) changeRole(w http.ResponseWriter, r *http.Request, req *request) {
	role, err := member.ParseRole(r.PostForm.Get("role"))
	if err != nil {
		c.fail(w, r, http.StatusBadRequest, "Choose owner, admin or member.")
		return
	}
	_, err = c.Members.SetRole(r.Context(), req.current.WorkspaceID, r.PathValue("user"), role)
	c.afterMemberChange(w, r, req, err, "role")
}

func (c *Console) afterMemberChange(w http.ResponseWriter, r *http.Request, req *request, err error, done string) {
	switch {
	case errors.Is(err, member.ErrNotMember):
		c.fail(w, r, http.StatusNotFound, "That person is not a member of "+req.current.WorkspaceName+".")
	case errors.Is(err, member.ErrLastOwner):
		c.fail(w, r, http.StatusConflict, "A workspace keeps at least one owner: make someone else an owner first.")
	case err != nil:
		c.internalError(w, r, "change member", err)
	default:
		c.logger(r).Info("member changed", "workspace_id", req.current.WorkspaceID, "user_id", r.PathValue("user"), "change", done, "by", req.session.UserID)
		http.Redirect(w, r, Base+"/settings/members?done="+done, http.StatusSeeOther)
	}
}

func (c *Console) removeMemberPage(w http.ResponseWriter, r *http.Request, req *request) {
	if !req.current.Role.ManagesMembers() {
		c.fail(w, r, http.StatusForbidden, "Only owners manage members.")
		return
	}
	ms, err := c.Members.Members(r.Context(), req.current.WorkspaceID)
	if err != nil {
		c.internalError(w, r, "read members", err)
		return
	}
	for _, m := range ms {
		if m.UserID == r.PathValue("user") {
			c.show(w, r, http.StatusOK, c.view(req, "members", "Remove "+m.Email), pages.RemoveMember(req.acting(), m))
			return
		}
	}
	c.fail(w, r, http.StatusNotFound, "That person is not a member of "+req.current.WorkspaceName+".")
}

// removeMember ends the membership and revokes the person's connections
// to the workspace (also when the membership was gone already: a retry
// of a removal whose answer was lost).
func (c *Console) removeMember(w http.ResponseWriter, r *http.Request, req *request) {
	err := c.Members.RemoveMember(r.Context(), req.current.WorkspaceID, r.PathValue("user"))
	if err == nil || errors.Is(err, member.ErrNotMember) {
		if _, rerr := c.OAuth.Store.RevokeMember(r.Context(), req.current.WorkspaceID, r.PathValue("user"), c.Clock.Now()); rerr != nil {
			err = rerr
		}
	}
	c.afterMemberChange(w, r, req, err, "removed")
}
