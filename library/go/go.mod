module dotcourse.example/ch07

go 1.19
