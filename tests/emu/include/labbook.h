/* labbook.h's twin for tests/emu: what a kernels file asks of labbook.h. The emulated GPU runs
 * every version, so sm_90a's code is always available. */
#pragma once

inline const char *lb_sm90a_unavailable(int) { return nullptr; }
