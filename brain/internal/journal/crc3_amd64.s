//go:build amd64 && !purego

#include "textflag.h"

// func crc32c3(a, b, c *byte, na, nb, nc int) (ra, rb, rc uint32)
//
// The three chains run side by side while each has a word left, then the
// last 1-7 bytes of each take one instruction per 4, 2 and 1 of them,
// still side by side.
TEXT ·crc32c3(SB), NOSPLIT, $0-60
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ c+16(FP), R8
	MOVQ na+24(FP), R9
	MOVQ nb+32(FP), R10
	MOVQ nc+40(FP), R11
	MOVL $0xffffffff, AX
	MOVL $0xffffffff, BX
	MOVL $0xffffffff, DX

	// Words of all three.
	MOVQ R9, CX
	CMPQ R10, CX
	CMOVQLT R10, CX
	CMPQ R11, CX
	CMOVQLT R11, CX
	SHRQ $3, CX
	JZ words
	MOVQ CX, R12
	SHLQ $3, R12
	SUBQ R12, R9
	SUBQ R12, R10
	SUBQ R12, R11

loop3:
	CRC32Q (SI), AX
	CRC32Q (DI), BX
	CRC32Q (R8), DX
	ADDQ $8, SI
	ADDQ $8, DI
	ADDQ $8, R8
	DECQ CX
	JNZ loop3

	// Words left in one or two of them.
words:
	XORQ R12, R12
	CMPQ R9, $8
	JLT wb
	CRC32Q (SI), AX
	ADDQ $8, SI
	SUBQ $8, R9
	INCQ R12
wb:
	CMPQ R10, $8
	JLT wc
	CRC32Q (DI), BX
	ADDQ $8, DI
	SUBQ $8, R10
	INCQ R12
wc:
	CMPQ R11, $8
	JLT wdone
	CRC32Q (R8), DX
	ADDQ $8, R8
	SUBQ $8, R11
	INCQ R12
wdone:
	TESTQ R12, R12
	JNZ words

	// At most 7 bytes are left in each.
	TESTQ $4, R9
	JZ fb
	CRC32L (SI), AX
	ADDQ $4, SI
fb:
	TESTQ $4, R10
	JZ fc
	CRC32L (DI), BX
	ADDQ $4, DI
fc:
	TESTQ $4, R11
	JZ ta
	CRC32L (R8), DX
	ADDQ $4, R8
ta:
	TESTQ $2, R9
	JZ tb
	CRC32W (SI), AX
	ADDQ $2, SI
tb:
	TESTQ $2, R10
	JZ tc
	CRC32W (DI), BX
	ADDQ $2, DI
tc:
	TESTQ $2, R11
	JZ oa
	CRC32W (R8), DX
	ADDQ $2, R8
oa:
	TESTQ $1, R9
	JZ ob
	CRC32B (SI), AX
ob:
	TESTQ $1, R10
	JZ oc
	CRC32B (DI), BX
oc:
	TESTQ $1, R11
	JZ done
	CRC32B (R8), DX

done:
	NOTL AX
	NOTL BX
	NOTL DX
	MOVL AX, ra+48(FP)
	MOVL BX, rb+52(FP)
	MOVL DX, rc+56(FP)
	RET

// func cpuid1ECX() uint32
TEXT ·cpuid1ECX(SB), NOSPLIT, $0-4
	MOVL $1, AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+0(FP)
	RET
