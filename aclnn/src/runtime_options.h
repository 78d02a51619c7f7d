// Context options set through aclrtCtxSetSysParamOpt, for the parts of libaclnn that honour them.
#pragma once

namespace aclnn_cpu {

// True when the current context has ACL_OPT_DETERMINISTIC = 1 (false without a context). The
// convolution engine may consult it in phase 1 to fix its reduction order across thread counts.
bool deterministic_requested();

}  // namespace aclnn_cpu
