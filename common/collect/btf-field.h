/* The byte offset of a kernel structure's field, from the kernel's own type information
 * (/sys/kernel/btf/vmlinux): what a BPF program built here needs to read a field that moves
 * between kernel builds (task_struct's thread.fsbase, for Python frames) without a compiler or
 * libbpf. */
#pragma once

/* The offset of member PATH ("thread.fsbase": members of members, by name) in struct STRUCT_NAME
 * of the BTF file at FILE. Returns the offset in bytes (>= 0); -ENOENT if the file, the struct
 * or a member is not there; -EBADMSG if the file is not BTF or does not add up; -EINVAL for a
 * bit field; -ENOMEM. */
long btf_field_offset(const char *file, const char *struct_name, const char *path);
