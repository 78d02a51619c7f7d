/* aclgrad's CPU implementation of AscendCL: the umbrella header CANN programs include. */
#ifndef ACL_ACL_H_
#define ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_MAJOR_VERSION 1
#define ACL_MINOR_VERSION 0
#define ACL_PATCH_VERSION 0

/* Initialises the runtime. configPath may be null or name a JSON file (its content is ignored).
 * A second aclInit without aclFinalize returns ACL_ERROR_REPEAT_INITIALIZE. */
ACL_FUNC_VISIBILITY aclError aclInit(const char* configPath);
/* Releases every stream and device still open. A repeated call returns ACL_ERROR_REPEAT_FINALIZE
 * and does nothing else. */
ACL_FUNC_VISIBILITY aclError aclFinalize(void);
ACL_FUNC_VISIBILITY aclError aclrtGetVersion(int32_t* majorVersion, int32_t* minorVersion,
                                             int32_t* patchVersion);
/* The message of the most recent failure on this thread (which API, which parameter, what value
 * and what was expected), or "" when none. The pointer stays valid until the next failing call. */
ACL_FUNC_VISIBILITY const char* aclGetRecentErrMsg(void);

#ifdef __cplusplus
}
#endif

#endif /* ACL_ACL_H_ */
