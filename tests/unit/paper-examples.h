/* The paper's examples as folded stacks, shared by the profile tests. */
#pragma once

/* process_db (paper §3-4): main's time goes mostly to the qsort called from uniquify_db. */
static const char *const process_db = "main;read_db 18\n"
                                      "main;uniquify_db;qsort;name_field_lt 1820\n"
                                      "main;uniquify_db;build_db_ptrs 300\n"
                                      "main;uniquify_db;merge_adjacent_records 235\n"
                                      "main;print_salary_list;extract_salary_fields 303\n"
                                      "main;print_salary_list;qsort;integer_lt 0\n";

/* The forms program (paper §4.4, Figure 1, §7.2's sample tree). */
static const char *const forms_folded =
        "main;invoice;address_information;db_get_property;db_read_record 85\n"
        "main;invoice;db_get_property;db_read_record 22\n"
        "main;loan_application;address_information;db_get_property;db_read_record 84\n"
        "main;loan_application;db_get_property;db_read_record 22\n"
        "main;envelope;address_information;db_get_property;db_read_record 85\n"
        "main;envelope;db_get_property;db_read_record 21\n"
        "main;form_US_1040;address_information;db_get_property;db_read_record 84\n"
        "main;form_US_1040;db_get_property;db_read_record 22\n"
        "main;form_NJ_1040;address_information;db_get_property;db_read_record 84\n"
        "main;form_NJ_1040;db_get_property;db_read_record 21\n"
        "main;db_update_record;db_read_record 84\n";
