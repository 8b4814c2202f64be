/* Chat templates: what formats/chat_template.c and formats/chat_jinja.c share. */
#ifndef FORGIA_CHAT_INTERNAL_H
#define FORGIA_CHAT_INTERNAL_H

#include "forgia/chat.h"

/* Renders text messages through the Jinja interpreter (the fallback of
 * fg_chat_render_template for a template no built-in renderer recognises). */
fg_status fg_chat_render_jinja_msgs(const char *tmpl, size_t tlen, const fg_chat_msg *msgs, size_t n,
                                    const fg_chat_opts *o, char **out, size_t *len);

#endif
