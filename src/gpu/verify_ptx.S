/* SPDX-License-Identifier: Apache-2.0 */
/* The check kernels' PTX text (src/gpu/verify.ptx) as one NUL-terminated string, nw_verify_ptx. */
	.section .rodata
	.global nw_verify_ptx
	.type nw_verify_ptx, @object
	.balign 8
nw_verify_ptx:
	.incbin "src/gpu/verify.ptx"
	.byte 0
	.size nw_verify_ptx, . - nw_verify_ptx
	.section .note.GNU-stack, "", @progbits
