"""Lecture mode: the chapter's stages 1 and 2 on screens that step their loop one
callback at a time (`stage_screen`), narrated in the chapter's terms (`narration`)."""
