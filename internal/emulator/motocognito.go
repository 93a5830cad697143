package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// motoCognito bridges two places where moto 5.2.1's Cognito and AWS's
// differ in form, not in meaning, so that the console's code runs
// unchanged against both:
//
//   - The SDK leaves false booleans out: SetUserMFAPreference turning TOTP
//     off sends "SoftwareTokenMfaSettings":{}, which AWS reads as
//     Enabled=false and moto ignores. The fields are written out.
//   - moto answers MFA_SETUP's ChallengeParameters.MFAS_CAN_SETUP as a JSON
//     list where AWS sends a string (a map of strings): the SDK cannot
//     decode it. The list is given as AWS's string.
func motoCognito(stack *middleware.Stack) error {
	if err := stack.Serialize.Add(middleware.SerializeMiddlewareFunc("motoMFAPreference",
		func(ctx context.Context, in middleware.SerializeInput, next middleware.SerializeHandler) (middleware.SerializeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			if req, ok := in.Request.(*smithyhttp.Request); ok && isCognito(ctx) && (op == "SetUserMFAPreference" || op == "AdminSetUserMFAPreference") {
				if body := req.GetStream(); body != nil {
					b, err := io.ReadAll(body)
					if err != nil {
						return middleware.SerializeOutput{}, middleware.Metadata{}, err
					}
					b = bytes.ReplaceAll(b, []byte(`"SoftwareTokenMfaSettings":{}`), []byte(`"SoftwareTokenMfaSettings":{"Enabled":false,"PreferredMfa":false}`))
					if in.Request, err = req.SetStream(bytes.NewReader(b)); err != nil {
						return middleware.SerializeOutput{}, middleware.Metadata{}, err
					}
				}
			}
			return next.HandleSerialize(ctx, in)
		}), middleware.After); err != nil {
		return err
	}
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("motoChallengeParameters",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			resp, ok := out.RawResponse.(*smithyhttp.Response)
			if err != nil || !ok || !isCognito(ctx) || resp.StatusCode != 200 {
				return out, md, err
			}
			b, rerr := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if rerr != nil {
				return out, md, rerr
			}
			resp.Body = io.NopCloser(bytes.NewReader(fixChallengeParameters(b)))
			return out, md, nil
		}), middleware.After)
}

func isCognito(ctx context.Context) bool {
	return awsmiddleware.GetServiceID(ctx) == "Cognito Identity Provider"
}

// fixChallengeParameters rewrites list values of ChallengeParameters as
// the JSON strings AWS sends; any other body is returned as it came.
func fixChallengeParameters(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"ChallengeParameters"`)) {
		return b
	}
	var body map[string]json.RawMessage
	if json.Unmarshal(b, &body) != nil {
		return b
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(body["ChallengeParameters"], &params) != nil {
		return b
	}
	changed := false
	for k, v := range params {
		if len(v) > 0 && v[0] == '[' {
			s, _ := json.Marshal(string(v))
			params[k], changed = s, true
		}
	}
	if !changed {
		return b
	}
	body["ChallengeParameters"], _ = json.Marshal(params)
	out, err := json.Marshal(body)
	if err != nil {
		return b
	}
	return out
}
