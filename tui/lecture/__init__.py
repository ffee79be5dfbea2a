"""Lecture mode: the chapter's stages 1 and 2 on screens that step their loop one
callback at a time (`stage_screen`), drawn from stage snapshots by `stage_panels`, which
also show a recorded lecture (`stage_replay`) and one watched from elsewhere
(`stage_watched`)."""
