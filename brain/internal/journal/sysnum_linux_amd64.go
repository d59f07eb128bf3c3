package journal

// sysSyncfs is syncfs(2)'s system call number (not in package syscall).
const sysSyncfs = 306
