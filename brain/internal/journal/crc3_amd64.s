//go:build amd64 && !purego

#include "textflag.h"

// func crc32c3x8(a, b, c *byte, n int, sa, sb, sc uint32) (ra, rb, rc uint32)
TEXT ·crc32c3x8(SB), NOSPLIT, $0-60
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ c+16(FP), R8
	MOVQ n+24(FP), CX
	MOVL sa+32(FP), AX
	MOVL sb+36(FP), BX
	MOVL sc+40(FP), DX
	TESTQ CX, CX
	JZ done

loop:
	CRC32Q (SI), AX
	CRC32Q (DI), BX
	CRC32Q (R8), DX
	ADDQ $8, SI
	ADDQ $8, DI
	ADDQ $8, R8
	DECQ CX
	JNZ loop

done:
	MOVL AX, ra+48(FP)
	MOVL BX, rb+52(FP)
	MOVL DX, rc+56(FP)
	RET

// func crc32cTail(p *byte, n int, s uint32) uint32
TEXT ·crc32cTail(SB), NOSPLIT, $0-28
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	MOVL s+16(FP), AX
words:
	CMPQ CX, $8
	JL four
	CRC32Q (SI), AX
	ADDQ $8, SI
	SUBQ $8, CX
	JMP words
four:
	// At most 7 bytes are left: one instruction each for 4, 2 and 1 of
	// them.
	TESTQ $4, CX
	JZ two
	CRC32L (SI), AX
	ADDQ $4, SI
two:
	TESTQ $2, CX
	JZ one
	CRC32W (SI), AX
	ADDQ $2, SI
one:
	TESTQ $1, CX
	JZ end
	CRC32B (SI), AX
end:
	MOVL AX, ret+24(FP)
	RET

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
